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

class EscapingFormatter final : public spdlog::formatter {
 public:
  explicit EscapingFormatter(std::unique_ptr<spdlog::formatter> inner) : inner_(std::move(inner)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (std::none_of(payload.begin(), payload.end(), IsControl)) {
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
  for (char c : text) {
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
