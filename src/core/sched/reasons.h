#pragma once

#include <map>
#include <string>
#include <string_view>

namespace tessera::sched {

// HAMi's reason strings (hami-protocol.md 5.5), exactly as kube-scheduler will show them.
namespace reason {
inline constexpr std::string_view kCardNotHealth = "CardNotHealth";
inline constexpr std::string_view kCardCordoned = "CardCordoned";
inline constexpr std::string_view kCardTypeMismatch = "CardTypeMismatch";
inline constexpr std::string_view kNumaNotFit = "NumaNotFit";
inline constexpr std::string_view kCardUuidMismatch = "CardUuidMismatch";
inline constexpr std::string_view kCardTimeSlicingExhausted = "CardTimeSlicingExhausted";
inline constexpr std::string_view kExclusiveDeviceAllocateConflict =
    "ExclusiveDeviceAllocateConflict";
inline constexpr std::string_view kResourceQuotaNotFit = "ResourceQuotaNotFit";
inline constexpr std::string_view kCardInsufficientMemory = "CardInsufficientMemory";
inline constexpr std::string_view kCardInsufficientCore = "CardInsufficientCore";
inline constexpr std::string_view kCardComputeUnitsExhausted = "CardComputeUnitsExhausted";
inline constexpr std::string_view kCardMigTopologyInfeasible = "CardMigTopologyInfeasible";
inline constexpr std::string_view kAllocatedCardsInsufficientRequest =
    "AllocatedCardsInsufficientRequest";
inline constexpr std::string_view kNodeInsufficientDevice = "NodeInsufficientDevice";
// tessera's own, in place of CardMigTopologyInfeasible: the instance would fit on the GPU but
// for MIG instances tessera did not create (tessera.io/foreign-mig-instances).
inline constexpr std::string_view kCardMigSlicesHeldByForeignInstances =
    "CardMigSlicesHeldByForeignInstances";
}  // namespace reason

// Counts of reasons over one node's GPUs.
using ReasonCounts = std::map<std::string, int>;

// HAMi's GenReason: "<count>/<total> <Reason>" pieces, byte-wise sorted, joined with ", ".
std::string FormatNodeReason(const ReasonCounts& counts, int total_devices);

// kube-scheduler's FitError message: "0/<N> nodes are available: <count> <reason>, ...."
// with the "<count> <reason>" pieces sorted.
std::string FormatPodMessage(const std::map<std::string, std::string>& failed_nodes,
                             int total_nodes);

}  // namespace tessera::sched
