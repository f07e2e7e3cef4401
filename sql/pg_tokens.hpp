#pragma once
// The tokens of a PostgreSQL client's text as the rewrites read them, for the
// catalog-query test (reads_pg_catalog, rewrite_mysql.cpp).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sql/lexer.hpp"

namespace wirepool::sql {

struct PgToken {
  enum class Kind : uint8_t {
    word,    ///< identifier or keyword, unquoted
    quoted,  ///< quoted identifier of the dialect
    string,  ///< literal: '...', E'...', $tag$...$tag$ (and "..." in mysql)
    number,
    marker,  ///< $N, ?
    semicolon,
    lparen,
    rparen,
    comma,
    other,  ///< operators and punctuation ("::" is one token)
  };
  Kind kind;
  size_t begin;
  size_t end;
};

/// `text`, written by a PostgreSQL client for a backend of dialect `d`, as
/// tokens (comments and whitespace dropped): what is code and what is not,
/// read as both PostgreSQL (E'', $$, $N) and the backend's dialect do.
std::vector<PgToken> pg_client_tokens(std::string_view text, Dialect d);

/// The value of a PostgreSQL string token: E'...' with its escapes applied,
/// a $tag$ body, or a '...' literal with '' read as one quote.
std::string pg_string_value(std::string_view token);

}  // namespace wirepool::sql
