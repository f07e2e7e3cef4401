#pragma once
// PostgreSQL driver internals: the database entry's `connection` (a libpq
// conninfo, key=value or URI) checked and turned into PQconnectdbParams'
// keyword arrays, and secrets hidden for log lines.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::postgresql {

/// One (key, message) per problem: an `options` key (this driver takes none
/// yet), a conninfo libpq cannot parse, a conninfo that sets TLS itself
/// (sslmode, sslrootcert, ...: TLS comes from the entry's tls block), a pin
/// that is not 64 hex digits.
std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o);

/// PQconnectdbParams(keywords, values, expand_dbname = 1) arguments: the
/// conninfo as `dbname` first (expanded by libpq), then what the driver adds
/// (user when OpenOptions::user is set, password, keepalives, connect_timeout,
/// client_encoding, and from the tls
/// block sslmode / sslrootcert with channel_binding=require unless the conninfo
/// sets channel_binding: validate_options takes only require or prefer then). Keys the conninfo
/// already sets keep its values, except the TLS ones, which validate_options refuses.
struct ConnectParams {
  std::vector<std::pair<std::string, std::string>> pairs;
  /// NULL-terminated arrays pointing into `pairs` (valid while it lives).
  std::vector<const char*> keywords;
  std::vector<const char*> values;
};
ConnectParams connect_params(const db::OpenOptions& o);

/// `conninfo` for a log line: parsed by libpq (PQconninfoParse) and written
/// back as key=value pairs in libpq's order, with the values of `password`,
/// `sslpassword` and any key libpq marks as secret replaced by "***". A bare
/// database name comes back as it is; what libpq cannot parse, as a
/// placeholder.
std::string redact_conninfo(std::string_view conninfo);

/// The hosts of a conninfo naming several (`host=a,b port=p1,p2`, a URI's
/// `a:p1,b:p2`), paired with their ports (one port applies to all); empty
/// when it names one host or none.
std::vector<db::HostPort> conninfo_host_list(std::string_view conninfo);

/// Lower-case hex without colons ("AB:cd" -> "abcd").
std::string normalize_pin(std::string_view pin);

}  // namespace wirepool::postgresql
