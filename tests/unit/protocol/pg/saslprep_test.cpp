// SASLprep (RFC 4013) as PostgreSQL's pg_saslprep applies it to passwords.
//
// Cases: RFC 4013 section 3's examples (soft hyphen mapped to nothing, NFKC of
// U+00AA and U+2168, the bidi rule); ASCII passes through unchanged, control
// characters included, as PostgreSQL does; a non-ASCII space becomes U+0020;
// prohibited and unassigned code points, invalid UTF-8 and a string empty
// after mapping are refused, and prepare_password then uses the raw bytes; a
// verifier made from "I\u2168" is the one made from "IIX".

#include <gtest/gtest.h>

#include "protocol/pg/saslprep.hpp"
#include "protocol/pg/scram.hpp"

namespace wirepool::pg {
namespace {

TEST(Saslprep, Rfc4013Examples) {
  EXPECT_EQ(saslprep("I\xC2\xADX"), "IX");            // SOFT HYPHEN mapped to nothing
  EXPECT_EQ(saslprep("user"), "user");                // no transformation
  EXPECT_EQ(saslprep("USER"), "USER");                // case preserved
  EXPECT_EQ(saslprep("\xC2\xAA"), "a");               // U+00AA, NFKC
  EXPECT_EQ(saslprep("\xE2\x85\xA8"), "IX");          // U+2168, NFKC
  EXPECT_EQ(saslprep("\xD8\xA7\x31"), std::nullopt);  // U+0627 U+0031: bidi rule
}

TEST(Saslprep, AsciiPassesThroughAsPostgresqlDoes) {
  EXPECT_EQ(saslprep(std::string_view("a\x07z", 3)), std::string("a\x07z"));
  EXPECT_EQ(saslprep(""), "");
}

TEST(Saslprep, MappingAndNormalisation) {
  EXPECT_EQ(saslprep("I\xE2\x85\xA8"), "IIX");
  EXPECT_EQ(saslprep("a\xC2\xA0"
                     "b"),
            "a b");  // NO-BREAK SPACE
  EXPECT_EQ(saslprep("a\xE2\x80\x8B"
                     "b"),
            "a b");                                             // U+200B: a space in C.1.2
  EXPECT_EQ(saslprep("\xD8\xA7\xD8\xA8"), "\xD8\xA7\xD8\xA8");  // RandAL only
}

TEST(Saslprep, RefusedInputs) {
  EXPECT_EQ(saslprep("x\xE2\x80\x8Ey"), std::nullopt);  // U+200E LEFT-TO-RIGHT MARK (C.8)
  EXPECT_EQ(saslprep("x\xC2\x85y"), std::nullopt);      // U+0085, a control character
  EXPECT_EQ(saslprep("x\xC8\xA1y"), std::nullopt);      // U+0221, unassigned in Unicode 3.2
  EXPECT_EQ(saslprep("\xC2\xAD"), std::nullopt);        // empty after mapping
  EXPECT_EQ(saslprep("\xC3\x28"), std::nullopt);        // invalid UTF-8
  EXPECT_EQ(saslprep("\xC0\xAF"), std::nullopt);        // overlong
  EXPECT_EQ(saslprep("\xED\xA0\x80"), std::nullopt);    // a surrogate
  EXPECT_EQ(prepare_password("x\xE2\x80\x8Ey"), "x\xE2\x80\x8Ey");  // raw bytes
  EXPECT_EQ(prepare_password("\xC3\x28"), "\xC3\x28");
}

TEST(Saslprep, VerifierIsMadeFromThePreparedPassword) {
  const auto a = scram::make_verifier("I\xE2\x85\xA8", "0123456789abcdef", 16);
  const auto b = scram::make_verifier("IIX", "0123456789abcdef", 16);
  EXPECT_EQ(scram::format_verifier(a), scram::format_verifier(b));
}

}  // namespace
}  // namespace wirepool::pg
