// The relay's batches (server/pg_relay.hpp): whether the relay takes the
// batch at the client's in_ front (check; read_only_ahead for the routing of
// reads; known_on for a batch sent behind another), and the batch as the
// server gets it (build), with the client's statement names mapped to the
// server's.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "server/pg/client.hpp"
#include "server/pg/client_detail.hpp"
#include "server/pg_relay.hpp"
#include "server/pg_relay_detail.hpp"
#include "sql/classify.hpp"

namespace wirepool::server {

namespace relay = pg::relay;
using relay_detail::cache_key_of;

namespace {
/// The largest batch the relay takes: it writes a batch before it reads the
/// answers, so a batch must fit in the socket buffers (a larger one waits for
/// the ordinary path, which reads while it writes).
inline constexpr size_t kMaxRelayBatchBytes = 256 * 1024;
}  // namespace

std::shared_ptr<PgClient::Prepared> PgClient::register_parse(const relay::ParseMsg& m,
                                                             int8_t plain) {
  auto& slot = ext().statements[std::string(m.name)];
  if (slot && slot.use_count() == 1 && slot->sql == m.sql && slot->param_oids == m.oids) {
    // The same text parsed again under its name (an extended-query client's
    // unnamed statement, each execution): a fresh statement on the old strings.
    Prepared& p = *slot;
    std::string sql = std::move(p.sql), key = std::move(p.key);
    std::vector<uint32_t> oids = std::move(p.param_oids);
    p = Prepared{};
    p.sql = std::move(sql);
    p.param_oids = std::move(oids);
    p.key = std::move(key);
  } else {
    slot = std::make_shared<Prepared>();
    slot->sql = std::string(m.sql);
    slot->param_oids = m.oids;
    slot->key = cache_key_of(slot->sql, slot->param_oids);
  }
  Prepared& p = *slot;
  p.cls.kind = StatementKind::backend;
  p.relay_ok = 1;
  p.relay_plain = plain;
  p.nparams = p.param_oids.size();
  return slot;
}

PgRelay::Check PgRelay::check() {
  if (!c_.session_ || c_.skip_until_sync_ || c_.in_.empty()) return Check::no;
  if (!c_.session_->pool().pg_native() || c_.session_->mode() != config::PoolMode::transaction) {
    return Check::no;
  }
  // read_only.route_transactions: a read-only transaction's lease is taken on
  // the ordinary path, where the session picks the read-only database's pool.
  // read_only.route_statements: likewise an autocommit batch of reads.
  if (c_.session_->routes_reads() && !c_.session_->backend() && read_only_ahead()) {
    return Check::no;
  }
  // The rest of a routed statement's block (its Parse took the standby's
  // backend): the ordinary path runs it, and retries it on the primary.
  if (c_.session_->routed_statement()) return Check::no;
  // Open portals, or an implicit transaction of messages before this batch
  // (the ordinary path ends it at their Sync).
  if (c_.portals_open() || c_.session_->implicit()) return Check::no;
  // Settings SET in the transaction are read back at its end (settle_settings).
  if (c_.session_->settings_noted()) return Check::no;
  const size_t max_msg = c_.server_.config().server.max_message_size;
  if (!state_) state_ = RelayPath::of(c_.loop_).take_state();
  State& R = *state_;
  const auto buf = c_.in_.view();
  if (relay::scan_batch(buf, max_msg, R.frames) != relay::Scan::complete) return Check::no;
  const size_t total = R.frames.back().offset + R.frames.back().size;
  if (total > kMaxRelayBatchBytes) return Check::no;
  R.total = total;
  // The server splits statements as its standard_conforming_strings says.
  const bool bq = c_.session_->settings().backslash_quotes();

  // ---- 1. Does the relay take this batch? Decided before anything changes.
  std::vector<std::string_view> named;  // client statement names this batch parses
  bool parsed_unnamed = false, bound = false, parse_only = true;
  bool plain = true;
  auto statement_ok = [&](std::string_view name) {
    if (name.empty() && parsed_unnamed) return true;
    for (auto n : named)
      if (n == name) return true;
    if (!c_.ext_) return false;
    auto it = c_.ext_->statements.find(name);
    if (it == c_.ext_->statements.end()) return false;
    PgClient::Prepared& p = *it->second;
    if (p.relay_ok < 0 || p.relay_plain < 0) {
      bool pl = true;
      const bool ok = p.cls.kind == StatementKind::backend && !p.blank && p.show_name.empty() &&
                      sql::relay_may_send(p.sql, true, pl, bq);
      if (p.relay_ok < 0) p.relay_ok = ok;
      p.relay_plain = ok && pl;
    }
    plain = plain && p.relay_plain == 1;
    return p.relay_ok == 1;
  };
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    parse_only = parse_only && (f.type == 'P' || f.type == 'S');
    switch (f.type) {
      case 'Q':
        if (body.empty() || body.find('\0') != body.size() - 1) return Check::no;
        if (!sql::relay_may_send(body.substr(0, body.size() - 1), false, plain, bq))
          return Check::no;
        break;
      case 'P': {
        if (!relay::parse_parse(body, R.parse) ||
            !sql::relay_may_send(R.parse.sql, true, plain, bq)) {
          return Check::no;
        }
        if (R.parse.name.empty()) {
          parsed_unnamed = true;
        } else {
          // An existing name is an error the ordinary path reports (42P05).
          for (auto n : named)
            if (n == R.parse.name) return Check::no;
          if (c_.ext_ && c_.ext_->statements.count(R.parse.name)) return Check::no;
          named.push_back(R.parse.name);
        }
        break;
      }
      case 'B': {
        relay::BindMsg m;
        if (!relay::parse_bind(body, m) || !m.portal.empty() || !statement_ok(m.statement)) {
          return Check::no;
        }
        bound = true;
        break;
      }
      case 'D': {
        relay::TargetMsg m;
        if (!relay::parse_target(body, m)) return Check::no;
        if (m.kind == 'S' ? !statement_ok(m.name) : (!m.name.empty() || !bound)) {
          return Check::no;
        }
        break;
      }
      case 'E': {
        relay::ExecuteMsg m;
        // A row limit leaves a portal suspended for a later batch: not relayed.
        if (!relay::parse_execute(body, m) || !m.portal.empty() || !bound || m.max_rows != 0) {
          return Check::no;
        }
        break;
      }
      case 'C': {
        relay::TargetMsg m;
        if (!relay::parse_target(body, m) || (m.kind == 'P' && !m.name.empty())) {
          return Check::no;
        }
        break;
      }
      default:  // 'S'
        break;
    }
  }

  R.plain = plain;

  // ---- 2. The client's statements. Parses are registered where the ordinary
  // path finds them too.

  // A batch of Parses while no backend is held (libpq's PQprepare: Parse, Sync)
  // is answered at once, as the ordinary path does: waiting for a backend here
  // could deadlock with the client's own connections that hold every backend
  // in open transactions. The statements are prepared on first use.
  if (parse_only && !c_.session_->backend()) {
    for (const auto& f : R.frames) {
      if (f.type != 'P') continue;
      relay::parse_parse(f.body(buf), R.parse);
      c_.register_parse(R.parse, R.plain ? 1 : -1);
      pg::Encoder(c_.out_).parse_complete();
    }
    c_.in_.consume(total);
    c_.ready_for_query();
    return Check::answered;
  }
  return Check::go;
}

bool PgRelay::read_only_ahead() {
  Session& s = *c_.session_;
  s.note_movable_begin({});
  if (s.default_serializable()) return false;  // a hot standby refuses the level
  if (s.routes_transactions() && s.default_read_only()) return true;
  // The first message decides: a Query, or a Parse or a Bind of a statement,
  // that opens a read-only transaction.
  const auto buf = c_.in_.view();
  if (buf.size() < 5 || (buf[0] != 'Q' && buf[0] != 'P' && buf[0] != 'B')) return false;
  c_.route_mark_.reset();
  auto length_at = [&buf](size_t at) {
    return size_t{buf[at + 1]} << 24 | size_t{buf[at + 2]} << 16 | size_t{buf[at + 3]} << 8 |
           buf[at + 4];
  };
  const size_t len = length_at(0);
  if (len < 4 || buf.size() - 1 < len) return false;
  const std::string_view body(reinterpret_cast<const char*>(buf.data()) + 5, len - 4);
  std::string_view text;
  relay::ParseMsg parse;
  if (buf[0] == 'Q') {
    text = body.substr(0, body.find('\0'));
  } else if (buf[0] == 'P') {
    if (!relay::parse_parse(body, parse)) return false;
    text = parse.sql;
  } else {
    // A statement prepared before (a client that names its statements binds
    // them without a Parse from their second use on): the session's text.
    relay::BindMsg bind;
    if (!relay::parse_bind(body, bind) || !c_.ext_) return false;
    auto it = c_.ext_->statements.find(bind.statement);
    if (it == c_.ext_->statements.end()) return false;
    text = it->second->sql;
  }
  // The extended protocol's block executes the one statement once before its
  // Sync, all of it in in_ (a Parse or a Bind first).
  auto executes_once = [&buf, &length_at] {
    int executes = 0;
    for (size_t at = 0; at + 5 <= buf.size();) {
      const size_t n = length_at(at);
      if (n < 4 || buf.size() - at - 1 < n) break;
      const uint8_t type = buf[at];
      if (type == 'S') return executes == 1;
      if ((type == 'P' && at != 0) || type == 'Q' || type == 'H' || type == 'd' ||
          (type == 'E' && ++executes > 1)) {
        return false;
      }
      at += 1 + n;
    }
    return false;
  };
  const bool bq = s.settings().backslash_quotes();
  // The lexer only for a text that may begin a transaction (a comment may come first).
  size_t b = 0;
  while (b < text.size() && std::isspace(static_cast<unsigned char>(text[b])))
    ++b;
  const char first = b < text.size() ? static_cast<char>(std::toupper(text[b])) : '\0';
  const bool opener = first == 'B' || first == 'S' || first == '/' || first == '-';
  bool ro = s.routes_transactions() && opener && begins_read_only(text, bq);
  // A plain BEGIN alone as a Query: a SET TRANSACTION READ ONLY right after it
  // may move it (not one by the extended protocol: docs/high-availability.md).
  if (!ro && opener && buf[0] == 'Q' && s.routes_transactions() && begins_movable(text, bq)) {
    s.note_movable_begin(text);
  }
  bool statement = false;
  if (!ro && buf[0] != 'B' && s.routes_statements() && !s.default_read_only() &&
      reads_only(text, bq)) {
    // read_only.route_statements. A Query runs as one autocommit batch; an
    // extended-query block only when it is complete in in_ and executes that
    // one reading statement once before its Sync (a retry repeats only it).
    statement = buf[0] == 'Q' || executes_once();
    ro = statement;
    if (statement) c_.route_mark_ = c_.out_sent_ + c_.out_.size();
  }
  s.lease_read_only(ro, statement);
  return ro;
}

bool PgRelay::known_on(Backend& b) {
  // Only statements the server has confirmed: a Parse of one running ahead
  // could fail or be skipped (an error before it), and a Parse here could
  // evict one a batch ahead still uses.
  State& R = *state_;
  const auto buf = c_.in_.view();
  std::vector<std::string_view> parsed;  // this batch's client names, all known
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    std::string_view name;
    if (f.type == 'P') {
      relay::parse_parse(body, R.parse);
      if (!b.statements.relay_find(cache_key_of(R.parse.sql, R.parse.oids))) return false;
      parsed.push_back(R.parse.name);
      continue;
    }
    if (f.type == 'B') {
      relay::BindMsg m;
      relay::parse_bind(body, m);
      name = m.statement;
    } else if (f.type == 'D') {
      relay::TargetMsg m;
      relay::parse_target(body, m);
      if (m.kind != 'S') continue;
      name = m.name;
    } else {
      continue;
    }
    if (std::find(parsed.begin(), parsed.end(), name) != parsed.end()) continue;
    if (!c_.ext_) return false;
    auto it = c_.ext_->statements.find(name);
    if (it == c_.ext_->statements.end() || !b.statements.relay_find(it->second->key)) return false;
  }
  return true;
}

// The batch as the server gets it: the client's messages with its statement
// names mapped to the server's, Parses added where the server lacks one.
// `swallowed`: the first Parses were answered to the client already (a
// replay); `close_first`: server statements closed ahead of it.
void PgRelay::build(Backend& b, std::span<const uint8_t> buf, int swallowed,
                    std::span<const std::string> close_first) {
  State& R = *state_;
  R.to_server.clear();
  R.tracker.clear();
  R.parses.clear();
  R.executes = 0;
  R.shape = 0;
  for (const auto& name : close_first) {
    relay::put_target(R.to_server, 'C', 'S', name);
    R.tracker.expect(relay::Expect::swallow_close);
  }
  // Replayable (relay_replay): Parse, Bind, Describe and Execute up to one
  // final Sync, from an idle backend, each statement new to the client's view
  // (parsed in this batch, or never described to it).
  int syncs = 0;
  bool replayable = R.from_idle;
  int parse_frames = 0;
  bool cached = false;  // a statement the server had before this batch is used
  // The server's name for a client statement, preparing it first when the
  // server does not have it.
  auto server_name = [&](const PgClient::Prepared& p) -> std::string {
    for (const auto& e : R.parses) {
      if (e.key == p.key && !e.server_name.empty()) return e.server_name;
    }
    if (const auto* n = b.statements.relay_find(p.key)) {
      cached = true;
      return *n;
    }
    std::string evicted;
    std::string name = b.statements.relay_name(p.key, &evicted);
    if (!evicted.empty()) {
      relay::put_target(R.to_server, 'C', 'S', evicted);
      R.tracker.expect(relay::Expect::swallow_close);
    }
    relay::put_parse(R.to_server, name, p.sql, p.param_oids);
    R.tracker.expect(relay::Expect::swallow_parse, static_cast<int>(R.parses.size()));
    R.parses.push_back({"", p.key, name, true});
    return name;
  };
  auto client_statement = [&](std::string_view name) -> PgClient::Prepared& {
    return *c_.ext().statements.find(name)->second;
  };
  // A statement the client sees the shape of from now on.
  auto shown = [&](PgClient::Prepared& p, std::string_view name) {
    if (p.shown || p.described) {
      bool parsed_here = false;
      for (const auto& e : R.parses)
        parsed_here = parsed_here || (!e.added && e.client_name == name && e.key == p.key);
      if (!parsed_here) replayable = false;
    }
    p.shown = true;
  };
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    switch (f.type) {
      case 'P': {
        relay::parse_parse(body, R.parse);
        auto p = c_.register_parse(R.parse, R.plain ? 1 : -1);
        const int tag = static_cast<int>(R.parses.size());
        // Replayed: the client has its ParseComplete from the first time.
        const bool told = parse_frames++ < swallowed;
        // The unnamed statement too becomes a named one on the server, kept
        // for the next client that sends the same text: the server parses
        // and plans it once, not once per execution (as the ordinary path's
        // statement cache does).
        const std::string* known = b.statements.relay_find(p->key);
        for (const auto& e : R.parses) {
          if (!known && e.key == p->key && !e.server_name.empty()) known = &e.server_name;
        }
        if (known) {
          cached = true;
          // The server has it: the client's ParseComplete comes from here.
          if (!told) R.tracker.expect(relay::Expect::emit_parse_complete, tag);
          R.parses.push_back({std::string(R.parse.name), p->key, "", false});
          break;
        }
        std::string evicted;
        std::string name = b.statements.relay_name(p->key, &evicted);
        if (!evicted.empty()) {
          relay::put_target(R.to_server, 'C', 'S', evicted);
          R.tracker.expect(relay::Expect::swallow_close);
        }
        relay::put_parse(R.to_server, name, p->sql, p->param_oids);
        R.tracker.expect(told ? relay::Expect::swallow_parse : relay::Expect::parse, tag);
        R.parses.push_back({std::string(R.parse.name), p->key, std::move(name), false});
        break;
      }
      case 'B': {
        relay::BindMsg m;
        relay::parse_bind(body, m);
        PgClient::Prepared& p = client_statement(m.statement);
        shown(p, m.statement);
        R.shape = pool::Pipeline::shape_add(R.shape, p.key);
        std::string name = server_name(p);
        relay::put_bind(R.to_server, m.portal, name, m.rest);
        R.tracker.expect(relay::Expect::bind);
        break;
      }
      case 'D': {
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind == 'S') {
          PgClient::Prepared& p = client_statement(m.name);
          shown(p, m.name);
          std::string name = server_name(p);
          relay::put_target(R.to_server, 'D', 'S', name);
        } else {
          R.to_server.append(f.whole(buf));
        }
        R.tracker.expect(m.kind == 'S' ? relay::Expect::describe_statement
                                       : relay::Expect::describe_portal);
        break;
      }
      case 'C': {
        replayable = false;
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind == 'S') {
          // The client's name goes; the server keeps its copy for the next
          // client that prepares the same statement.
          c_.ext().statements.erase(std::string(m.name));
          R.tracker.expect(relay::Expect::emit_close_complete);
        } else {
          R.to_server.append(f.whole(buf));
          R.tracker.expect(relay::Expect::close);
        }
        break;
      }
      case 'E':
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::execute);
        ++R.executes;
        break;
      case 'S':
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::sync);
        ++syncs;
        break;
      case 'Q':
        replayable = false;
        R.shape = pool::Pipeline::shape_add(R.shape, body);
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::query);
        break;
    }
  }
  R.replayable = cached && replayable && syncs == 1 && R.frames.back().type == 'S';
}

}  // namespace wirepool::server
