#pragma once
// SASLprep (RFC 4013, the stringprep profile of RFC 3454) as PostgreSQL's
// pg_saslprep applies it to passwords before SCRAM hashes them (libpq does
// the same on the client side), so that a verifier made here from a
// `password:` entry matches what libpq or node-postgres derive:
//
//   - ASCII input is used as it is;
//   - input that is not valid UTF-8 is refused (the caller uses the raw bytes);
//   - map: non-ASCII spaces (C.1.2) to U+0020, "mapped to nothing" (B.1) removed;
//     an empty result is refused;
//   - normalise to NFKC (libunistring: the Unicode version PostgreSQL 15 uses);
//   - refuse prohibited characters (C.1.2, C.2.1-C.9) and code points
//     unassigned in Unicode 3.2 (A.1), and strings that break the bidi rules
//     (RFC 3454 section 6), checked as PostgreSQL checks them: on the mapped
//     string before normalisation.
//
// PostgreSQL hashes the raw password when SASLprep refuses it; so does
// prepare_password().

#include <optional>
#include <string>
#include <string_view>

namespace wirepool::pg {

/// The SASLprep'd form of `input`, or nullopt when SASLprep refuses it (not
/// UTF-8, empty after mapping, prohibited characters, bidi rules).
std::optional<std::string> saslprep(std::string_view input);

/// What SCRAM hashes for `password`, as PostgreSQL: its SASLprep'd form, or
/// the raw bytes when SASLprep refuses it.
std::string prepare_password(std::string_view password);

}  // namespace wirepool::pg
