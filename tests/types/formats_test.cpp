#include <covenant/types/formats.hpp>
#include <gtest/gtest.h>

namespace {

using namespace covenant::formats;

TEST(Formats, Urls) {
  EXPECT_TRUE(is_url("https://book.example.com/chapter-3?x=1#top"));
  EXPECT_TRUE(is_url("ftp://files.example.org"));
  EXPECT_FALSE(is_url("book.example.com/chapter"));
  EXPECT_FALSE(is_url("https://"));
  EXPECT_FALSE(is_url("https://exa mple.com"));
  EXPECT_FALSE(is_url("1http://x.org"));
}

TEST(Formats, Uuids) {
  EXPECT_TRUE(is_uuid("123e4567-e89b-12d3-a456-426614174000"));
  EXPECT_FALSE(is_uuid("chunk-12345-abcde"));
  EXPECT_FALSE(is_uuid("123e4567e89b12d3a456426614174000"));
}

TEST(Formats, DatesAndTimes) {
  EXPECT_TRUE(is_date("2024-02-29"));
  EXPECT_FALSE(is_date("2023-02-29"));
  EXPECT_FALSE(is_date("2025-13-01"));
  EXPECT_TRUE(is_time("10:30:00"));
  EXPECT_TRUE(is_time("23:59:60.5+02:00"));
  EXPECT_FALSE(is_time("24:00:00"));
  EXPECT_TRUE(is_date_time("2025-12-16T10:30:00Z"));
  EXPECT_TRUE(is_date_time("2025-12-16t10:30:00.123-05:30"));
  EXPECT_FALSE(is_date_time("2025-12-16T10:30:00"));  // the offset is required
  EXPECT_FALSE(is_date_time("2025-12-16"));
}

TEST(Formats, ParseDateTimeAppliesTheOffsetAndKeepsMilliseconds) {
  using namespace std::chrono;
  const auto utc = parse_date_time("2025-12-16T10:30:00Z");
  const auto shifted = parse_date_time("2025-12-16T12:30:00.250+02:00");
  ASSERT_TRUE(utc && shifted);
  EXPECT_EQ(*shifted - *utc, milliseconds(250));
  EXPECT_EQ(floor<days>(*utc), sys_days{year{2025} / December / 16});
  EXPECT_FALSE(parse_date_time("yesterday").has_value());
}

TEST(Formats, Emails) {
  EXPECT_TRUE(is_email("ada@example.org"));
  EXPECT_FALSE(is_email("ada@localhost"));
  EXPECT_FALSE(is_email("@example.org"));
  EXPECT_FALSE(is_email("a b@example.org"));
}

}  // namespace
