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

// NEL (U+0085) and the line separators U+2028/U+2029 end a line in some log viewers.
TEST(EscapeControlCharactersTest, UnicodeLineBreaksAreEscapedToo) {
  EXPECT_EQ(EscapeControlCharacters("a\xc2\x85"
                                    "b\xe2\x80\xa8"
                                    "c\xe2\x80\xa9"
                                    "d"),
            "a\\u0085b\\u2028c\\u2029d");
  EXPECT_EQ(EscapeControlCharacters("\xc2\xa0\xe2\x80\xa7"),
            "\xc2\xa0\xe2\x80\xa7");  // not controls
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
