#include "adapters/logging/log_setup.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace tessera::logging {
namespace {

bool IsControl(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// A control character encoded in UTF-8 beyond ASCII's: C1 (U+0080..U+009F, e.g. NEL U+0085)
// and the line and paragraph separators U+2028/U+2029, which some viewers break lines at.
// Returns its code point, or 0 when `text` does not start with one.
char32_t WideControlAt(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.size() >= 2 && byte(0) == 0xc2 && byte(1) >= 0x80 && byte(1) <= 0x9f) {
    return byte(1);
  }
  if (text.size() >= 3 && byte(0) == 0xe2 && byte(1) == 0x80 &&
      (byte(2) == 0xa8 || byte(2) == 0xa9)) {
    return 0x2000 + (byte(2) - 0xa8 + 0x28);
  }
  return 0;
}

bool HasControl(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (IsControl(text[i]) || WideControlAt(text.substr(i)) != 0) return true;
  }
  return false;
}

class EscapingFormatter final : public spdlog::formatter {
 public:
  explicit EscapingFormatter(std::unique_ptr<spdlog::formatter> inner) : inner_(std::move(inner)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (!HasControl(payload)) {
      inner_->format(msg, dest);
      return;
    }
    const std::string escaped = EscapeControlCharacters(payload);
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    inner_->format(copy, dest);
  }

  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<EscapingFormatter>(inner_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> inner_;
};

}  // namespace

std::string EscapeControlCharacters(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (const char32_t wide = WideControlAt(text.substr(i)); wide != 0) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(wide >> shift) & 0xf];
      i += wide < 0x100 ? 1 : 2;
      continue;
    }
    if (!IsControl(c)) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        out += "\\x";
        out += kHex[u >> 4];
        out += kHex[u & 0xf];
      }
    }
  }
  return out;
}

std::unique_ptr<spdlog::formatter> MakeEscapingFormatter(std::unique_ptr<spdlog::formatter> inner) {
  return std::make_unique<EscapingFormatter>(std::move(inner));
}

void InstallProcessLogger() {
  // Unnamed, as spdlog's own default logger is, so that lines look as before.
  auto logger =
      std::make_shared<spdlog::logger>("", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_formatter(MakeEscapingFormatter(std::make_unique<spdlog::pattern_formatter>()));
  logger->set_level(spdlog::get_level());
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace tessera::logging
