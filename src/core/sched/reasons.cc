#include "core/sched/reasons.h"

namespace tessera::sched {

std::string_view ReasonName(Reason r) {
  switch (r) {
    case Reason::kCardNotHealth:
      return reason::kCardNotHealth;
    case Reason::kCardCordoned:
      return reason::kCardCordoned;
    case Reason::kCardTypeMismatch:
      return reason::kCardTypeMismatch;
    case Reason::kNumaNotFit:
      return reason::kNumaNotFit;
    case Reason::kCardUuidMismatch:
      return reason::kCardUuidMismatch;
    case Reason::kCardTimeSlicingExhausted:
      return reason::kCardTimeSlicingExhausted;
    case Reason::kExclusiveDeviceAllocateConflict:
      return reason::kExclusiveDeviceAllocateConflict;
    case Reason::kResourceQuotaNotFit:
      return reason::kResourceQuotaNotFit;
    case Reason::kCardInsufficientMemory:
      return reason::kCardInsufficientMemory;
    case Reason::kCardInsufficientCore:
      return reason::kCardInsufficientCore;
    case Reason::kCardComputeUnitsExhausted:
      return reason::kCardComputeUnitsExhausted;
    case Reason::kCardMigTopologyInfeasible:
      return reason::kCardMigTopologyInfeasible;
    case Reason::kAllocatedCardsInsufficientRequest:
      return reason::kAllocatedCardsInsufficientRequest;
    case Reason::kNodeInsufficientDevice:
      return reason::kNodeInsufficientDevice;
    case Reason::kCardMigSlicesHeldByForeignInstances:
      return reason::kCardMigSlicesHeldByForeignInstances;
  }
  return {};
}

}  // namespace tessera::sched
