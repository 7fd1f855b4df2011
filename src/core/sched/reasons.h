#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
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

// The same reasons as values: what the cycle counts and carries; text is made from them only
// where it is shown (ReasonName).
enum class Reason : uint8_t {
  kCardNotHealth,
  kCardCordoned,
  kCardTypeMismatch,
  kNumaNotFit,
  kCardUuidMismatch,
  kCardTimeSlicingExhausted,
  kExclusiveDeviceAllocateConflict,
  kResourceQuotaNotFit,
  kCardInsufficientMemory,
  kCardInsufficientCore,
  kCardComputeUnitsExhausted,
  kCardMigTopologyInfeasible,
  kAllocatedCardsInsufficientRequest,
  kNodeInsufficientDevice,
  kCardMigSlicesHeldByForeignInstances,
};
inline constexpr size_t kReasonKinds = 15;

// HAMi's word for `r`.
std::string_view ReasonName(Reason r);

// How many times each reason was met over one node's GPUs (a GPU visit counts once per reason).
class ReasonCounts {
 public:
  ReasonCounts() = default;
  int32_t& operator[](Reason r) { return counts_[static_cast<size_t>(r)]; }
  int32_t operator[](Reason r) const { return counts_[static_cast<size_t>(r)]; }
  bool empty() const {
    for (const int32_t c : counts_) {
      if (c > 0) return false;
    }
    return true;
  }
  // Calls `visit(reason, count)` for each reason met, in the enum's order.
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (size_t i = 0; i < kReasonKinds; ++i) {
      if (counts_[i] > 0) visit(static_cast<Reason>(i), counts_[i]);
    }
  }
  friend bool operator==(const ReasonCounts&, const ReasonCounts&) = default;
  friend bool operator<(const ReasonCounts& a, const ReasonCounts& b) {
    return a.counts_ < b.counts_;
  }

 private:
  std::array<int32_t, kReasonKinds> counts_{};
};

}  // namespace tessera::sched
