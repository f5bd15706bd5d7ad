#include "core/base64.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

TEST(Base64, DecodesStrictly) {
  EXPECT_EQ(base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(base64_decode("aGVs\nbG8h"), "hello!");  // PEM-style line breaks
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_THROW(base64_decode("aGVsbG8"), std::invalid_argument);   // padding missing
  EXPECT_THROW(base64_decode("aGV*bG8h"), std::invalid_argument);  // not the alphabet
  EXPECT_THROW(base64_decode("a=Vs"), std::invalid_argument);      // padding inside
}

TEST(Base64, EncodesWithPaddingAndRoundTripsEveryLength) {
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_EQ(base64_encode("hello!"), "aGVsbG8h");
  EXPECT_EQ(base64_encode(""), "");
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes) << "length " << bytes.size();
    bytes += static_cast<char>(i * 37);
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
