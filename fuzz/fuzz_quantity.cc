// Fuzzes Kubernetes resource quantities ("16Gi", "1.5", "100m", "1e3").

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/model/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = tessera::model::Quantity::Parse(text);
  if (!q.ok()) return 0;
  const bool whole = q->IsWholeNumber();
  const auto value = q->ToInt64();
  // A value that fits in int64 is a whole number; a fraction never converts.
  if (value.has_value() && !whole) std::abort();
  if (value.has_value() && *value < 0 && !q->IsNegative()) std::abort();
  if (q->text() != text) std::abort();
  return 0;
}
