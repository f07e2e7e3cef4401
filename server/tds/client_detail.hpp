#pragma once
// What the files of TdsClient share.

#include <cctype>
#include <string>
#include <string_view>

namespace wirepool::server::tds_detail {

inline std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace wirepool::server::tds_detail
