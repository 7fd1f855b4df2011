#include "core/model/quantity.h"

#include <cctype>
#include <limits>

namespace tessera::model {
namespace {

constexpr int kMaxDigits = 30;  // far beyond any GPU quantity; keeps Int128 arithmetic safe
constexpr int kMaxExponent = 30;

bool MulChecked(Int128 a, Int128 b, Int128* out) { return !__builtin_mul_overflow(a, b, out); }

bool Pow(Int128 base, int exp, Int128* out) {
  Int128 r = 1;
  for (int i = 0; i < exp; ++i) {
    if (!MulChecked(r, base, &r)) return false;
  }
  *out = r;
  return true;
}

Error Bad(std::string_view text, std::string_view why) {
  return Error{"quantity \"" + std::string(text) + "\": " + std::string(why)};
}

}  // namespace

Result<Quantity> Quantity::Parse(std::string_view text) {
  Quantity q;
  q.text_ = std::string(text);
  size_t i = 0;
  const size_t n = text.size();
  if (n == 0) return Bad(text, "empty");
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') {
    negative = text[i] == '-';
    ++i;
  }
  Int128 num = 0;
  int digits = 0;
  int frac_digits = 0;
  bool seen_point = false;
  bool any_digit = false;
  for (; i < n; ++i) {
    char c = text[i];
    if (c == '.') {
      if (seen_point) return Bad(text, "more than one decimal point");
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    any_digit = true;
    if (num != 0 || c != '0') ++digits;
    if (digits > kMaxDigits) return Bad(text, "too many digits");
    num = num * 10 + (c - '0');
    if (seen_point) ++frac_digits;
  }
  if (!any_digit) return Bad(text, "no digits");
  int exp10 = -frac_digits;
  int exp2 = 0;
  std::string_view suffix = text.substr(i);
  if (suffix.empty()) {
  } else if (suffix == "Ki") {
    exp2 = 10;
  } else if (suffix == "Mi") {
    exp2 = 20;
  } else if (suffix == "Gi") {
    exp2 = 30;
  } else if (suffix == "Ti") {
    exp2 = 40;
  } else if (suffix == "Pi") {
    exp2 = 50;
  } else if (suffix == "Ei") {
    exp2 = 60;
  } else if (suffix == "n") {
    exp10 -= 9;
  } else if (suffix == "u") {
    exp10 -= 6;
  } else if (suffix == "m") {
    exp10 -= 3;
  } else if (suffix == "k") {
    exp10 += 3;
  } else if (suffix == "M") {
    exp10 += 6;
  } else if (suffix == "G") {
    exp10 += 9;
  } else if (suffix == "T") {
    exp10 += 12;
  } else if (suffix == "P") {
    exp10 += 15;
  } else if (suffix == "E") {
    exp10 += 18;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool eneg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      eneg = e[0] == '-';
      e = e.substr(1);
    }
    if (e.empty() || e.size() > 3) return Bad(text, "bad exponent");
    int ev = 0;
    for (char c : e) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return Bad(text, "bad exponent");
      ev = ev * 10 + (c - '0');
    }
    exp10 += eneg ? -ev : ev;
  } else {
    return Bad(text, "unknown suffix \"" + std::string(suffix) + "\"");
  }
  if (exp10 > kMaxExponent || exp10 < -kMaxExponent - kMaxDigits) {
    return Bad(text, "exponent out of range");
  }
  Int128 factor = 1;
  if (!Pow(2, exp2, &factor) || !MulChecked(num, factor, &num)) return Bad(text, "too large");
  if (exp10 > 0) {
    if (!Pow(10, exp10, &factor) || !MulChecked(num, factor, &num)) return Bad(text, "too large");
    exp10 = 0;
  }
  q.numerator_ = negative ? -num : num;
  q.scale_ = -exp10;
  return q;
}

bool Quantity::IsWholeNumber() const {
  Int128 div = 1;
  if (!Pow(10, scale_, &div)) {
    return numerator_ == 0;
  }
  return numerator_ % div == 0;
}

std::optional<long long> Quantity::ToMilli() const {
  Int128 v = numerator_;
  int scale = scale_;
  // value * 1000 = numerator * 10^(3 - scale)
  if (scale <= 3) {
    Int128 f = 1;
    if (!Pow(10, 3 - scale, &f) || !MulChecked(v, f, &v)) return std::nullopt;
  } else {
    Int128 div = 1;
    if (!Pow(10, scale - 3, &div)) return numerator_ > 0 ? 1 : 0;
    Int128 q = v / div;
    if (v % div != 0 && v > 0) ++q;  // round up, as MilliValue does
    v = q;
  }
  if (v > std::numeric_limits<long long>::max() || v < std::numeric_limits<long long>::min()) {
    return std::nullopt;
  }
  return static_cast<long long>(v);
}

std::optional<long long> Quantity::ToInt64() const {
  if (!IsWholeNumber()) return std::nullopt;
  Int128 div = 1;
  if (!Pow(10, scale_, &div)) return 0;  // numerator_ == 0 here
  Int128 v = numerator_ / div;
  if (v > std::numeric_limits<long long>::max() || v < std::numeric_limits<long long>::min()) {
    return std::nullopt;
  }
  return static_cast<long long>(v);
}

}  // namespace tessera::model
