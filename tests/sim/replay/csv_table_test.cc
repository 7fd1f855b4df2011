#include "sim/replay/csv_table.h"

#include <gtest/gtest.h>

namespace tessera::sim::replay {
namespace {

TEST(CsvTable, HeaderColumnsQuotedFieldsAndLineEnds) {
  Result<CsvTable> table =
      ParseCsv("\xEF\xBB\xBF name , value\r\n\n\"a,b\",\"say \"\"hi\"\"\"\r\nc,2\n", "t.csv");
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(table->header, (std::vector<std::string>{"name", "value"}));
  ASSERT_EQ(table->rows.size(), 2U);
  EXPECT_EQ(table->rows[0].first, 3);  // line numbers count the blank line
  EXPECT_EQ(table->rows[0].second, (std::vector<std::string>{"a,b", "say \"hi\""}));
  EXPECT_EQ(table->rows[1].second, (std::vector<std::string>{"c", "2"}));
  EXPECT_EQ(table->Column({"missing", "value"}), 1U);
  EXPECT_FALSE(table->Column({"missing"}));
  EXPECT_EQ(TrimBlanks(" \tx y\t "), "x y");
}

TEST(CsvTable, ErrorsNameTheSourceAndTheLine) {
  Result<CsvTable> short_row = ParseCsv("a,b\n1,2\n3\n", "runs.csv");
  ASSERT_FALSE(short_row.ok());
  EXPECT_EQ(short_row.error().message, "runs.csv:3: expected 2 fields (as in the header), got 1");
  Result<CsvTable> open_quote = ParseCsv("a\n\"x\n", "q.csv");
  ASSERT_FALSE(open_quote.ok());
  EXPECT_EQ(open_quote.error().message, "q.csv:2: unterminated quoted field");
  EXPECT_FALSE(ParseCsv("\n\n", "e.csv").ok());
}

}  // namespace
}  // namespace tessera::sim::replay
