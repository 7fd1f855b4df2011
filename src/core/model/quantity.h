#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/common/result.h"

namespace tessera::model {

__extension__ typedef __int128 Int128;  // exact arithmetic for quantities; GCC and Clang have it

// A Kubernetes resource quantity ("2", "8000", "16Gi", "1.5", "100m", "1e3"), held exactly as
// numerator / 10^scale so that integrality can be decided without floating point.
class Quantity {
 public:
  static Result<Quantity> Parse(std::string_view text);

  // The value when it is a whole number that fits in int64; nullopt for fractions or overflow.
  std::optional<long long> ToInt64() const;
  bool IsWholeNumber() const;
  // The value in thousandths, rounded up (Kubernetes' MilliValue); nullopt on overflow.
  std::optional<long long> ToMilli() const;
  bool IsNegative() const { return numerator_ < 0; }
  const std::string& text() const { return text_; }

 private:
  Int128 numerator_ = 0;
  int scale_ = 0;  // value = numerator_ / 10^scale_, scale_ >= 0
  std::string text_;
};

}  // namespace tessera::model
