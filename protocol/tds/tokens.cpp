// The token stream: the encoder and the streaming decoder (tokens.hpp).
#include "protocol/tds/tokens.hpp"

#include <atomic>
#include <cstring>

#include "protocol/tds/wire.hpp"

namespace wirepool::tds {

namespace {
using namespace wire;
}  // namespace

// ---------------------------------------------------------------------------
// Token encoders

uint16_t current_command(std::string_view verb) {
  if (verb == "SELECT") return command::kSelect;
  if (verb == "INSERT") return command::kInsert;
  if (verb == "DELETE") return command::kDelete;
  if (verb == "UPDATE") return command::kUpdate;
  return 0;
}

void TokenEncoder::login_ack(const LoginAck& a) {
  const size_t at = begin_len_token(out_, token::kLoginAck);
  wire::put_u8(out_, a.interface);
  // TDSVersion goes out big-endian here (0x74000004 -> 74 00 00 04).
  for (int s = 24; s >= 0; s -= 8)
    wire::put_u8(out_, static_cast<uint8_t>(a.tds_version >> s));
  put_b_varchar(out_, a.prog_name);
  out_.append(reinterpret_cast<const char*>(a.prog_version.data()), 4);
  end_len_token(out_, at);
}

void TokenEncoder::env_change_text(uint8_t type, std::string_view nv, std::string_view ov) {
  const size_t at = begin_len_token(out_, token::kEnvChange);
  wire::put_u8(out_, type);
  put_b_varchar(out_, nv);
  put_b_varchar(out_, ov);
  end_len_token(out_, at);
}

namespace {
void env_bytes(std::string& out, uint8_t type, std::string_view nv, std::string_view ov) {
  const size_t at = begin_len_token(out, token::kEnvChange);
  wire::put_u8(out, type);
  wire::put_u8(out, static_cast<uint8_t>(nv.size()));
  out += nv;
  wire::put_u8(out, static_cast<uint8_t>(ov.size()));
  out += ov;
  end_len_token(out, at);
}
std::string descriptor_bytes(uint64_t d) {
  std::string s;
  wire::put_u64(s, d);
  return s;
}
std::string_view collation_view(const Collation& c) {
  return {reinterpret_cast<const char*>(c.bytes.data()), 5};
}
}  // namespace

void TokenEncoder::env_collation(const Collation& nv, const Collation& ov) {
  env_bytes(out_, env::kSqlCollation, collation_view(nv), collation_view(ov));
}
void TokenEncoder::env_begin_transaction(uint64_t d) {
  env_bytes(out_, env::kBeginTransaction, descriptor_bytes(d), {});
}
void TokenEncoder::env_commit_transaction(uint64_t d) {
  env_bytes(out_, env::kCommitTransaction, {}, descriptor_bytes(d));
}
void TokenEncoder::env_rollback_transaction(uint64_t d) {
  env_bytes(out_, env::kRollbackTransaction, {}, descriptor_bytes(d));
}
void TokenEncoder::env_reset_connection_ack() {
  env_bytes(out_, env::kResetConnectionAck, {}, {});
}

void TokenEncoder::message(const ServerMessage& m) {
  const size_t at = begin_len_token(out_, m.is_error ? token::kError : token::kInfo);
  wire::put_u32(out_, static_cast<uint32_t>(m.number));
  wire::put_u8(out_, m.state);
  wire::put_u8(out_, m.severity);
  // The token's length is 2 bytes: the message is cut to 30,000 characters.
  put_us_varchar(out_, m.message, 30000);
  put_b_varchar(out_, m.server_name);
  put_b_varchar(out_, m.proc_name);
  wire::put_u32(out_, static_cast<uint32_t>(m.line));
  end_len_token(out_, at);
}

void TokenEncoder::feature_ext_ack(std::span<const FeatureExt> acks) {
  wire::put_u8(out_, token::kFeatureExtAck);
  for (const auto& f : acks) {
    wire::put_u8(out_, f.id);
    wire::put_u32(out_, static_cast<uint32_t>(f.data.size()));
    out_ += f.data;
  }
  wire::put_u8(out_, feature::kTerminator);
}

void TokenEncoder::col_metadata(std::span<const ColumnMeta> columns) {
  wire::put_u8(out_, token::kColMetadata);
  wire::put_u16(out_, static_cast<uint16_t>(columns.size()));
  for (const auto& c : columns) {
    wire::put_u32(out_, c.user_type);
    wire::put_u16(out_, c.flags);
    encode_type_info(out_, c.type);
    const std::string u = ucs2_capped(c.name, 128);
    wire::put_u8(out_, static_cast<uint8_t>(u.size() / 2));
    out_ += u;
  }
}

void TokenEncoder::col_metadata_none() {
  wire::put_u8(out_, token::kColMetadata);
  wire::put_u16(out_, 0xFFFF);
}

namespace {
db::Error row_error(std::string message) {
  db::Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = "08P01";
  e.message = std::move(message);
  return e;
}
}  // namespace

db::Status TokenEncoder::row(std::span<const ColumnMeta> columns,
                             std::span<const db::ValueView> values) {
  if (columns.size() != values.size())
    return row_error("row of " + std::to_string(values.size()) + " values for " +
                     std::to_string(columns.size()) + " columns");
  // NBCROW when its bitmap is smaller than the NULLs it leaves out, or when a
  // fixed-length column (no NULL form of its own) is NULL.
  size_t saved = 0;
  bool fixed_null = false;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (!values[i].is_null()) continue;
    const size_t n = null_size(columns[i].type);
    saved += n;
    fixed_null = fixed_null || (n == 0 && columns[i].type.type != type::kNull);
  }
  const size_t bitmap = (columns.size() + 7) / 8;
  if (saved <= bitmap && !fixed_null) return plain_row(columns, values);
  const size_t before = out_.size();
  wire::put_u8(out_, token::kNbcRow);
  const size_t bits_at = out_.size();
  out_.append(bitmap, '\0');
  for (size_t i = 0; i < columns.size(); ++i) {
    if (values[i].is_null()) {
      out_[bits_at + i / 8] = static_cast<char>(out_[bits_at + i / 8] | (1 << (i % 8)));
      continue;
    }
    db::Status s = encode_value(out_, columns[i].type, values[i]);
    if (!s.ok()) {
      out_.resize(before);
      return s;
    }
  }
  return {};
}

db::Status TokenEncoder::plain_row(std::span<const ColumnMeta> columns,
                                   std::span<const db::ValueView> values) {
  if (columns.size() != values.size())
    return row_error("row of " + std::to_string(values.size()) + " values for " +
                     std::to_string(columns.size()) + " columns");
  const size_t before = out_.size();
  wire::put_u8(out_, token::kRow);
  for (size_t i = 0; i < columns.size(); ++i) {
    db::Status s = encode_value(out_, columns[i].type, values[i]);
    if (!s.ok()) {
      out_.resize(before);
      return s;
    }
  }
  return {};
}

void TokenEncoder::done(const Done& d) {
  wire::put_u8(out_, d.token);
  wire::put_u16(out_, d.status);
  wire::put_u16(out_, d.current_command);
  wire::put_u64(out_, d.row_count);
}

void TokenEncoder::return_status(int32_t value) {
  wire::put_u8(out_, token::kReturnStatus);
  wire::put_u32(out_, static_cast<uint32_t>(value));
}

db::Status TokenEncoder::return_value(uint16_t ordinal, std::string_view name, uint8_t st,
                                      const TypeInfo& type, const db::ValueView& v) {
  const size_t before = out_.size();
  wire::put_u8(out_, token::kReturnValue);
  wire::put_u16(out_, ordinal);
  put_b_varchar(out_, name);
  wire::put_u8(out_, st);
  wire::put_u32(out_, 0);
  wire::put_u16(out_, col_flag::kNullable);
  encode_type_info(out_, type);
  db::Status s = encode_value(out_, type, v);
  if (!s.ok()) out_.resize(before);
  return s;
}

// ---------------------------------------------------------------------------
// Token decoder

namespace {

/// Parses one length-prefixed token's body; false + error on malformed input.
bool parse_login_ack(Bytes body, LoginAck& a, std::string& e) {
  Reader r(body);
  a.interface = r.u8();
  a.tds_version = 0;
  for (int i = 0; i < 4; ++i)
    a.tds_version = (a.tds_version << 8) | r.u8();
  a.prog_name.clear();
  if (!read_b_varchar(r, a.prog_name, &e)) {
    if (e.empty()) e = "malformed LOGINACK";
    return false;
  }
  Bytes v = r.take(4);
  if (!r.ok() || r.remaining() != 0) {
    e = "malformed LOGINACK";
    return false;
  }
  std::memcpy(a.prog_version.data(), v.data(), 4);
  return true;
}

bool parse_env_change(Bytes body, EnvChange& c, std::string& e) {
  Reader r(body);
  c.type = r.u8();
  if (!r.ok()) {
    e = "empty ENVCHANGE";
    return false;
  }
  switch (c.type) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 13:
    case 19:  // user instance name
      if (!read_b_varchar(r, c.new_value, &e) || !read_b_varchar(r, c.old_value, &e)) {
        if (e.empty()) e = "malformed ENVCHANGE";
        return false;
      }
      break;
    case 7:     // SQL collation
    case 8:     // begin transaction
    case 9:     // commit transaction
    case 10:    // rollback transaction
    case 11:    // enlist DTC transaction
    case 12:    // defect transaction
    case 16:    // transaction manager address
    case 17:    // transaction ended
    case 18: {  // reset connection ack
      const uint8_t n = r.u8();
      c.new_value = std::string(wire::as_view(r.take(n)));
      const uint8_t o = r.u8();
      c.old_value = std::string(wire::as_view(r.take(o)));
      if (!r.ok()) {
        e = "malformed ENVCHANGE";
        return false;
      }
      break;
    }
    default:  // routing (20), promote transaction (15), newer types: kept raw
      c.new_value = std::string(wire::as_view(r.rest()));
      r.take(r.remaining());
      break;
  }
  if (r.remaining() != 0) {
    e = "trailing bytes in ENVCHANGE type " + std::to_string(c.type);
    return false;
  }
  return true;
}

bool parse_message(Bytes body, bool is_error, ServerMessage& m, std::string& e) {
  Reader r(body);
  m.is_error = is_error;
  m.number = static_cast<int32_t>(r.u32());
  m.state = r.u8();
  m.severity = r.u8();
  if (!r.ok() || !read_us_varchar(r, m.message, &e) || !read_b_varchar(r, m.server_name, &e) ||
      !read_b_varchar(r, m.proc_name, &e)) {
    if (e.empty()) e = "malformed INFO/ERROR token";
    return false;
  }
  m.line = static_cast<int32_t>(r.u32());
  if (!r.ok() || r.remaining() != 0) {
    e = "malformed INFO/ERROR token";
    return false;
  }
  return true;
}

}  // namespace

#ifdef WIREPOOL_PLANTED_DEFECTS
namespace {
std::atomic<PlantedDefect> g_defect{PlantedDefect::none};
}  // namespace

void set_planted_defect_for_test(PlantedDefect d) {
  g_defect.store(d);
}
PlantedDefect planted_defect() {
  return g_defect.load();
}
PlantedDefect planted_defect_from_name(std::string_view name) {
  if (name == "nbcrow") return PlantedDefect::nbcrow_bitmap_wrong_end;
  if (name == "brackets") return PlantedDefect::marker_in_brackets;
  if (name == "select_count") return PlantedDefect::select_count_as_affected;
  return PlantedDefect::none;
}
#endif

Decoded<Token> TokenDecoder::next(Bytes all) {
  size_t base = 0;
  for (;;) {
    const Bytes in = all.subspan(base);
    Reader r(in);
    const uint8_t tok = r.u8();
    if (!r.ok()) return {};
    auto ok = [&](Token t) { return done_ok(std::move(t), base + r.pos()); };
    // Tokens with a 2-byte length: wait for the whole body first.
    auto body = [&](Bytes& b) {
      const uint16_t n = r.u16();
      b = r.take(n);
      return r.ok();
    };
    std::string e;
    Bytes b;
    switch (tok) {
      case token::kTabName:
      case token::kColInfo:
      case token::kSspi:
        if (!body(b)) return {};
        base += r.pos();
        continue;
      case token::kLoginAck: {
        if (!body(b)) return {};
        LoginAck a;
        if (!parse_login_ack(b, a, e)) return fail<Token>(e);
        return ok(std::move(a));
      }
      case token::kEnvChange: {
        if (!body(b)) return {};
        EnvChange c;
        if (!parse_env_change(b, c, e)) return fail<Token>(e);
        return ok(std::move(c));
      }
      case token::kError:
      case token::kInfo: {
        if (!body(b)) return {};
        ServerMessage m;
        if (!parse_message(b, tok == token::kError, m, e)) return fail<Token>(e);
        return ok(std::move(m));
      }
      case token::kOrder: {
        if (!body(b)) return {};
        if (b.size() % 2 != 0) return fail<Token>("ORDER token of odd length");
        Order o;
        Reader br(b);
        while (br.remaining() > 0)
          o.columns.push_back(br.u16());
        return ok(std::move(o));
      }
      case token::kFeatureExtAck: {
        std::vector<FeatureExt> acks;
        for (;;) {
          const uint8_t id = r.u8();
          if (!r.ok()) return {};
          if (id == feature::kTerminator) break;
          const uint32_t n = r.u32();
          if (!r.ok()) return {};
          if (n > limits_.max_value) return fail<Token>("FEATUREEXTACK data too long");
          Bytes d = r.take(n);
          if (!r.ok()) return {};
          if (acks.size() >= 64) return fail<Token>("FEATUREEXTACK with too many features");
          acks.push_back({id, std::string(wire::as_view(d))});
        }
        return ok(std::move(acks));
      }
      case token::kColMetadata: {
        const uint16_t count = r.u16();
        if (!r.ok()) return {};
        if (count == 0xFFFF) return ok(std::vector<ColumnMeta>{});  // NoMetaData: keep columns_
        if (count > 4096)
          return fail<Token>("COLMETADATA with " + std::to_string(count) +
                             " columns (the limit is 4096)");
        std::vector<ColumnMeta> cols;
        cols.reserve(count);
        for (uint16_t i = 0; i < count; ++i) {
          ColumnMeta c;
          c.user_type = r.u32();
          c.flags = r.u16();
          if (!r.ok()) return {};
          auto t = decode_type_info(r.rest());
          if (t.status == DecodeStatus::need_more) return {};
          if (t.status == DecodeStatus::error) return fail<Token>("COLMETADATA: " + t.error);
          r.take(t.consumed);
          c.type = t.message;
          const uint8_t n = r.u8();
          Bytes name = r.take(size_t{n} * 2);
          if (!r.ok()) return {};
          if (!ucs2_to_utf8(name, c.name, &e)) return fail<Token>("column name: " + e);
          cols.push_back(std::move(c));
        }
        columns_ = cols;
        return ok(std::move(cols));
      }
      case token::kRow:
      case token::kNbcRow: {
        if (columns_.empty()) return fail<Token>("ROW without COLMETADATA");
        Bytes bitmap;
        if (tok == token::kNbcRow) {
          bitmap = r.take((columns_.size() + 7) / 8);
          if (!r.ok()) return {};
        }
        Row row;
        row.values.reserve(columns_.size());
        for (size_t i = 0; i < columns_.size(); ++i) {
          // Bit i of the bitmap (least significant first) is column i ([MS-TDS] 2.2.7.17).
#ifdef WIREPOOL_PLANTED_DEFECTS
          const int bit = g_defect.load() == PlantedDefect::nbcrow_bitmap_wrong_end
                              ? (0x80 >> (i % 8))
                              : (1 << (i % 8));
#else
          const int bit = 1 << (i % 8);
#endif
          if (!bitmap.empty() && (bitmap[i / 8] & bit) != 0) {
            TypedValue null;
            null.type = columns_[i].type;
            row.values.push_back(std::move(null));
            continue;
          }
          auto v = decode_value(columns_[i].type, r.rest(), limits_);
          if (v.status == DecodeStatus::need_more) return need_at<Token>(r.pos(), v.needed);
          if (v.status == DecodeStatus::error)
            return fail_from<Token>("column " + columns_[i].name + ": ", v);
          r.take(v.consumed);
          row.values.push_back(std::move(v.message));
        }
        return ok(std::move(row));
      }
      case token::kDone:
      case token::kDoneProc:
      case token::kDoneInProc: {
        Done d;
        d.token = tok;
        d.status = r.u16();
        d.current_command = r.u16();
        d.row_count = r.u64();
        if (!r.ok()) return {};
        return ok(d);
      }
      case token::kReturnStatus: {
        const uint32_t v = r.u32();
        if (!r.ok()) return {};
        return ok(static_cast<int32_t>(v));
      }
      case token::kReturnValue: {
        ReturnValue rv;
        rv.ordinal = r.u16();
        const uint8_t n = r.u8();
        Bytes name = r.take(size_t{n} * 2);
        rv.status = r.u8();
        rv.user_type = r.u32();
        rv.flags = r.u16();
        if (!r.ok()) return {};
        if (!ucs2_to_utf8(name, rv.name, &e)) return fail<Token>("RETURNVALUE name: " + e);
        auto t = decode_type_info(r.rest());
        if (t.status == DecodeStatus::need_more) return {};
        if (t.status == DecodeStatus::error) return fail<Token>("RETURNVALUE: " + t.error);
        r.take(t.consumed);
        auto v = decode_value(t.message, r.rest(), limits_);
        if (v.status == DecodeStatus::need_more) return need_at<Token>(r.pos(), v.needed);
        if (v.status == DecodeStatus::error) return fail_from<Token>("RETURNVALUE: ", v);
        r.take(v.consumed);
        rv.value = std::move(v.message);
        return ok(std::move(rv));
      }
      default:
        return fail<Token>("unknown TDS token 0x" + hex2(tok));
    }
  }
}

}  // namespace wirepool::tds
