#include "adapters/logging/log_setup.h"

#include <gtest/gtest.h>
#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>

namespace tessera::logging {
namespace {

TEST(EscapeControlCharactersTest, WritesControlBytesAsEscapesAndLeavesTheRest) {
  EXPECT_EQ(EscapeControlCharacters("ns/pod-a"), "ns/pod-a");
  EXPECT_EQ(EscapeControlCharacters("a\nb\rc\td"), "a\\nb\\rc\\td");
  EXPECT_EQ(EscapeControlCharacters(std::string("x\x1b[31my\x7f\0z", 10)),
            "x\\x1b[31my\\x7f\\x00z");
  EXPECT_EQ(EscapeControlCharacters("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 untouched
}

// A pod named "p\n[error] forged" once wrote two log lines, the second looking like tessera's.
TEST(EscapingFormatterTest, ANameWithANewlineStaysOnOneLine) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger logger("test", sink);
  logger.set_formatter(MakeEscapingFormatter(std::make_unique<spdlog::pattern_formatter>("%l %v")));
  logger.warn("filter {}: {}", "ns/p\n[error] forged", "no node fits");
  logger.info("plain {}", "line");
  EXPECT_EQ(out.str(), "warning filter ns/p\\n[error] forged: no node fits\ninfo plain line\n");
}

}  // namespace
}  // namespace tessera::logging
