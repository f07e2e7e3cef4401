#include "protocol/pg/relay.hpp"

#include <cstring>

namespace wirepool::pg::relay {

namespace {

uint32_t get_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

void put_u32(std::string& out, uint32_t v) {
  char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  out.append(b, 4);
}

void put_u16(std::string& out, uint16_t v) {
  char b[2] = {char(v >> 8), char(v)};
  out.append(b, 2);
}

/// Reads a NUL-terminated string from `body` at `pos`.
bool take_cstr(std::string_view body, size_t& pos, std::string_view& out) {
  size_t end = body.find('\0', pos);
  if (end == std::string_view::npos) return false;
  out = body.substr(pos, end - pos);
  pos = end + 1;
  return true;
}

void put_cstr(std::string& out, std::string_view s) {
  out.append(s);
  out.push_back('\0');
}

/// Opens a message: type and a length placeholder; returns where it starts.
size_t open(std::string& out, char type) {
  size_t at = out.size();
  out.push_back(type);
  out.append(4, '\0');
  return at;
}

void close(std::string& out, size_t at) {
  uint32_t len = static_cast<uint32_t>(out.size() - at - 1);
  auto* p = reinterpret_cast<uint8_t*>(out.data() + at + 1);
  p[0] = uint8_t(len >> 24);
  p[1] = uint8_t(len >> 16);
  p[2] = uint8_t(len >> 8);
  p[3] = uint8_t(len);
}

}  // namespace

Scan scan_batch(Bytes in, size_t max_len, std::vector<Frame>& frames) {
  frames.clear();
  size_t pos = 0;
  while (true) {
    if (in.size() - pos < 5) return Scan::incomplete;
    const char type = static_cast<char>(in[pos]);
    const uint32_t len = get_u32(in.data() + pos + 1);
    if (len < 4 || len > max_len) return Scan::unsuitable;
    switch (type) {
      case 'Q':
        if (!frames.empty()) return Scan::unsuitable;  // a Query inside an extended batch
        break;
      case 'P':
      case 'B':
      case 'D':
      case 'E':
      case 'C':
      case 'S':
        break;
      default:
        return Scan::unsuitable;
    }
    if (frames.size() == kMaxBatch) return Scan::unsuitable;
    if (in.size() - pos < size_t(len) + 1) return Scan::incomplete;
    frames.push_back(Frame{type, pos, size_t(len) + 1});
    pos += size_t(len) + 1;
    if (type == 'Q' || type == 'S') return Scan::complete;
  }
}

bool parse_parse(std::string_view body, ParseMsg& out) {
  size_t pos = 0;
  if (!take_cstr(body, pos, out.name) || !take_cstr(body, pos, out.sql)) return false;
  if (body.size() - pos < 2) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(body.data()) + pos;
  const size_t n = (size_t(p[0]) << 8) | p[1];
  if (body.size() - pos != 2 + 4 * n) return false;
  out.types = body.substr(pos);
  out.oids.clear();
  for (size_t i = 0; i < n; ++i)
    out.oids.push_back(get_u32(p + 2 + 4 * i));
  return true;
}

bool parse_bind(std::string_view body, BindMsg& out) {
  size_t pos = 0;
  if (!take_cstr(body, pos, out.portal) || !take_cstr(body, pos, out.statement)) return false;
  out.rest = body.substr(pos);
  return true;
}

bool parse_target(std::string_view body, TargetMsg& out) {
  if (body.size() < 2 || (body[0] != 'S' && body[0] != 'P')) return false;
  out.kind = body[0];
  size_t pos = 1;
  if (!take_cstr(body, pos, out.name)) return false;
  return pos == body.size();
}

bool parse_execute(std::string_view body, ExecuteMsg& out) {
  size_t pos = 0;
  if (!take_cstr(body, pos, out.portal)) return false;
  if (body.size() - pos != 4) return false;
  out.max_rows = static_cast<int32_t>(get_u32(reinterpret_cast<const uint8_t*>(body.data()) + pos));
  return true;
}

void put_parse(std::string& out, std::string_view name, std::string_view sql,
               std::span<const uint32_t> oids) {
  size_t at = open(out, 'P');
  put_cstr(out, name);
  put_cstr(out, sql);
  put_u16(out, static_cast<uint16_t>(oids.size()));
  for (uint32_t o : oids)
    put_u32(out, o);
  close(out, at);
}

void put_bind(std::string& out, std::string_view portal, std::string_view statement,
              std::string_view rest) {
  size_t at = open(out, 'B');
  put_cstr(out, portal);
  put_cstr(out, statement);
  out.append(rest);
  close(out, at);
}

void put_target(std::string& out, char type, char kind, std::string_view name) {
  size_t at = open(out, type);
  out.push_back(kind);
  put_cstr(out, name);
  close(out, at);
}

std::string_view error_field(std::string_view body, char code) {
  size_t pos = 0;
  while (pos < body.size() && body[pos] != '\0') {
    char c = body[pos++];
    std::string_view value;
    if (!take_cstr(body, pos, value)) return {};
    if (c == code) return value;
  }
  return {};
}

void put_error_as_error(std::string& out, std::string_view body, std::string_view message) {
  size_t at = open(out, 'E');
  size_t pos = 0;
  while (pos < body.size() && body[pos] != '\0') {
    char c = body[pos++];
    std::string_view value;
    if (!take_cstr(body, pos, value)) break;
    if (c == 'S' || c == 'V') {
      if (value == "FATAL" || value == "PANIC") value = "ERROR";
    } else if (c == 'M' && !message.empty()) {
      value = message;
    }
    out.push_back(c);
    put_cstr(out, value);
  }
  out.push_back('\0');
  close(out, at);
}

// ---------------------------------------------------------------------------
// Tracker

void Tracker::clear() {
  items_.clear();
  head_ = 0;
  confirmed_.clear();
  emitted_parses_ = 0;
  failed_ = false;
}

void Tracker::expect(Expect e, int tag) {
  items_.push_back(Item{e, tag});
}

void Tracker::emit_due(std::string& out) {
  while (!empty()) {
    const Expect e = front().what;
    if (e == Expect::emit_parse_complete) {
      out.append("1\0\0\0\4", 5);
      confirmed_.push_back(front().tag);
      ++emitted_parses_;
    } else if (e == Expect::emit_close_complete) {
      out.append("3\0\0\0\4", 5);
    } else {
      break;
    }
    pop();
  }
}

Tracker::Step Tracker::on_message(char type) {
  Step s;
  // Reported at any time: the client gets them as they come.
  if (type == 'N' || type == 'S' || type == 'A') {
    s.forward = true;
    return s;
  }
  if (empty()) {
    s.unexpected = true;
    return s;
  }
  const Item head = front();
  if (type == 'E') {
    s.forward = true;
    failed_ = true;
    if (head.what == Expect::query) return s;  // the query goes on to its ReadyForQuery
    // The server skips everything up to the Sync, answers included.
    while (!empty() && front().what != Expect::sync)
      pop();
    if (empty()) s.unexpected = true;
    return s;
  }
  auto ends = [&](bool forward) {
    s.forward = forward;
    pop();
  };
  switch (head.what) {
    case Expect::parse:
    case Expect::swallow_parse:
      if (type != '1') break;
      confirmed_.push_back(head.tag);
      ends(head.what == Expect::parse);
      return s;
    case Expect::bind:
      if (type != '2') break;
      ends(true);
      return s;
    case Expect::describe_statement:
      if (type == 't') {
        s.forward = true;
        front().what = Expect::describe_portal;  // RowDescription or NoData next
        return s;
      }
      break;
    case Expect::describe_portal:
      if (type != 'T' && type != 'n') break;
      ends(true);
      return s;
    case Expect::close:
    case Expect::swallow_close:
      if (type != '3') break;
      ends(head.what == Expect::close);
      return s;
    case Expect::execute:
      if (type == 'D') {
        s.forward = true;
        return s;
      }
      if (type != 'C' && type != 'I' && type != 's') break;
      ends(true);
      return s;
    case Expect::sync:
      if (type != 'Z') break;
      ends(true);
      s.done = true;
      return s;
    case Expect::query:
      if (type == 'T' || type == 'D' || type == 'C' || type == 'I') {
        s.forward = true;
        return s;
      }
      if (type != 'Z') break;  // COPY ('G', 'H', 'W') is never relayed
      ends(true);
      s.done = true;
      return s;
    case Expect::emit_parse_complete:
    case Expect::emit_close_complete:
      break;  // emitted before any server message is read
  }
  s.unexpected = true;
  return s;
}

}  // namespace wirepool::pg::relay
