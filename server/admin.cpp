#include "server/admin.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

#include "wirepool_version.hpp"

namespace wirepool::server {

namespace asio = boost::asio;

namespace {

constexpr uint32_t kText = 25;
constexpr uint32_t kInt8 = 20;

using Row = std::vector<std::optional<std::string>>;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

/// Splits a command into words; a double-quoted word keeps its case and loses its quotes.
std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
    if (i >= s.size()) break;
    std::string w;
    if (s[i] == '"') {
      ++i;
      while (i < s.size()) {
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            w += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        w += s[i++];
      }
      out.push_back(std::move(w));
      continue;
    }
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])))
      w += s[i++];
    out.push_back(std::move(w));
  }
  return out;
}

std::string timestamp(std::chrono::system_clock::time_point t) {
  if (t.time_since_epoch().count() == 0) return {};
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string num(uint64_t v) {
  return std::to_string(v);
}
std::string num(int64_t v) {
  return std::to_string(v);
}

std::string duration_text(config::Duration d) {
  auto ms = d.count();
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

AdminResult error(std::string sqlstate, std::string message) {
  AdminResult r;
  r.sqlstate = std::move(sqlstate);
  r.error = std::move(message);
  return r;
}

AdminResult done(std::string tag) {
  AdminResult r;
  r.tag = std::move(tag);
  return r;
}

/// Text values of `key` in a key=value connection string (case-insensitive key;
/// values may be single-quoted as libpq allows, or end at ';' as ODBC's do).
std::optional<std::string> conninfo_value(std::string_view conn,
                                          std::initializer_list<std::string_view> keys) {
  size_t i = 0;
  while (i < conn.size()) {
    while (i < conn.size() && (std::isspace(static_cast<unsigned char>(conn[i])) || conn[i] == ';'))
      ++i;
    size_t eq = conn.find('=', i);
    if (eq == std::string_view::npos) break;
    std::string key = upper(conn.substr(i, eq - i));
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back())))
      key.pop_back();
    i = eq + 1;
    while (i < conn.size() && conn[i] == ' ')
      ++i;
    std::string value;
    if (i < conn.size() && conn[i] == '\'') {
      ++i;
      while (i < conn.size() && conn[i] != '\'') {
        if (conn[i] == '\\' && i + 1 < conn.size()) ++i;
        value += conn[i++];
      }
      ++i;
    } else if (i < conn.size() && conn[i] == '{') {  // ODBC {braced value}
      ++i;
      while (i < conn.size() && conn[i] != '}')
        value += conn[i++];
      ++i;
    } else {
      while (i < conn.size() && !std::isspace(static_cast<unsigned char>(conn[i])) &&
             conn[i] != ';')
        value += conn[i++];
    }
    for (auto k : keys) {
      if (key == upper(k)) return value;
    }
  }
  return std::nullopt;
}

/// scheme://user:password@host:port/database?... -> its parts (URI connection strings).
struct UriParts {
  std::string user, host, port, database;
};
std::optional<UriParts> uri_parts(std::string_view conn) {
  auto scheme = conn.find("://");
  if (scheme == std::string_view::npos) return std::nullopt;
  std::string_view rest = conn.substr(scheme + 3);
  rest = rest.substr(0, rest.find('?'));
  UriParts p;
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) p.database = std::string(rest.substr(slash + 1));
  auto at = authority.rfind('@');
  if (at != std::string_view::npos) {
    std::string_view userinfo = authority.substr(0, at);
    p.user = std::string(userinfo.substr(0, userinfo.find(':')));
    authority = authority.substr(at + 1);
  }
  auto colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    p.host = std::string(authority.substr(0, colon));
    p.port = std::string(authority.substr(colon + 1));
  } else {
    p.host = std::string(authority);
  }
  return p;
}

struct Target {
  std::optional<std::string> host, port, database;
};

/// Where a database entry points, as far as its connection string says.
Target target_of(const config::Database& d) {
  Target t;
  if (d.driver == "sqlite") {
    t.database = d.connection;
    return t;
  }
  if (auto u = uri_parts(d.connection)) {
    if (!u->host.empty()) t.host = u->host;
    if (!u->port.empty()) t.port = u->port;
    if (!u->database.empty()) t.database = u->database;
    return t;
  }
  t.host = conninfo_value(d.connection, {"host", "server", "hostaddr"});
  t.port = conninfo_value(d.connection, {"port"});
  t.database = conninfo_value(d.connection, {"dbname", "database"});
  return t;
}

/// The pools a PAUSE/RESUME/RECONNECT applies to: one by name, or all.
std::optional<std::vector<DatabasePoolPtr>> pools_for(Server& server,
                                                      const std::vector<std::string>& w,
                                                      std::string* missing) {
  if (w.size() < 2) return server.pools();
  if (!server.has_database(w[1])) {
    *missing = w[1];
    return std::nullopt;
  }
  return server.pools_of(w[1]);
}

AdminResult show_pools(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"database", kText},
               {"user", kText},
               {"cl_active", kInt8},
               {"cl_waiting", kInt8},
               {"cl_active_cancel_req", kInt8},
               {"cl_waiting_cancel_req", kInt8},
               {"sv_active", kInt8},
               {"sv_active_cancel", kInt8},
               {"sv_being_canceled", kInt8},
               {"sv_idle", kInt8},
               {"sv_used", kInt8},
               {"sv_tested", kInt8},
               {"sv_login", kInt8},
               {"maxwait", kInt8},
               {"maxwait_us", kInt8},
               {"pool_mode", kText},
               {"driver", kText}};
  for (const auto& pool : server.pools()) {
    const auto& c = pool->config();
    auto st = pool->stats();
    auto& m = pool->metrics();
    auto settings = pool->settings();
    int64_t clients = m.clients.load(), waiting = m.clients_waiting.load();
    auto wait_us = std::chrono::duration_cast<std::chrono::microseconds>(st.longest_wait).count();
    // Cancel requests are carried out at once (never queued), so the cancel
    // columns are always 0 here; sv_used counts connections being reset.
    r.rows.push_back(Row{
        c.name, pool->user(), num(std::max<int64_t>(0, clients - waiting)), num(waiting), "0", "0",
        num(uint64_t{st.in_use}), "0", "0", num(uint64_t{st.idle}), num(uint64_t{st.resetting}),
        "0", num(uint64_t{st.opening}), num(int64_t{wait_us / 1000000}),
        num(int64_t{wait_us % 1000000}), std::string(config::to_string(settings.mode)), c.driver});
  }
  return r;
}

const std::vector<AdminResult::Column>& connection_columns() {
  static const std::vector<AdminResult::Column> cols = {
      {"type", kText},         {"user", kText},       {"database", kText},
      {"state", kText},        {"addr", kText},       {"port", kInt8},
      {"local_addr", kText},   {"local_port", kInt8}, {"connect_time", kText},
      {"request_time", kText}, {"wait", kInt8},       {"wait_us", kInt8},
      {"close_needed", kInt8}, {"ptr", kText},        {"link", kText},
      {"remote_pid", kInt8},   {"tls", kText},        {"application_name", kText}};
  return cols;
}

std::string hex_id(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

asio::awaitable<std::vector<ClientInfo>> gather_clients(Loop& loop) {
  std::vector<ClientInfo> out;
  for (auto& c : loop.clients) {
    ClientInfo info;
    if (c.describe(info)) out.push_back(std::move(info));
  }
  co_return out;
}

asio::awaitable<AdminResult> show_clients(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = connection_columns();
  r.columns.push_back({"protocol", kText});
  for (Loop* loop : server.loops()) {
    // Each loop's client list is visited on its own thread.
    auto task = gather_clients(*loop);
    auto clients = co_await asio::co_spawn(loop->io, std::move(task), asio::use_awaitable);
    for (const auto& c : clients) {
      auto wait_us = std::chrono::duration_cast<std::chrono::microseconds>(c.wait).count();
      Row row{
          "C",
          c.user,
          c.database,
          c.state,
          c.address,
          num(uint64_t{c.port}),
          c.local_address,
          num(uint64_t{c.local_port}),
          timestamp(c.connect_time),
          timestamp(c.request_time.time_since_epoch().count() ? c.request_time : c.connect_time),
          num(int64_t{wait_us / 1000000}),
          num(int64_t{wait_us % 1000000}),
          "0",
          hex_id(c.id),
          c.backend ? std::optional<std::string>(hex_id(c.backend)) : std::nullopt,
          num(int64_t{c.key}),
          c.tls.empty() ? std::nullopt : std::optional<std::string>(c.tls),
          c.application_name,
          std::string(c.protocol)};
      r.rows.push_back(std::move(row));
    }
  }
  co_return r;
}

AdminResult show_hosts(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"database", kText}, {"host", kText},       {"role", kText},   {"timeline", kInt8},
               {"failures", kInt8}, {"ban_ms", kInt8},     {"lag_ms", kInt8}, {"lag_bytes", kInt8},
               {"reads", kText},    {"connections", kInt8}};
  for (const auto& m : server.host_monitors()) {
    for (const auto& h : m->snapshot()) {
      // lag_ms/lag_bytes: a standby's, NULL when unknown; reads: whether the
      // read-only database's pools open on it (NULL for a read-write database).
      r.rows.push_back(Row{
          m->database(), h.host.empty() ? "(connection)" : h.host + ":" + std::to_string(h.port),
          std::string(pool::to_string(h.role)), num(uint64_t{h.timeline}),
          num(uint64_t{h.failures}), num(int64_t{h.ban.count()}),
          h.lag ? std::optional<std::string>(num(int64_t{h.lag->count()})) : std::nullopt,
          h.lag_bytes ? std::optional<std::string>(num(uint64_t{*h.lag_bytes})) : std::nullopt,
          m->for_reads() ? std::optional<std::string>(h.reads ? "yes" : "no") : std::nullopt,
          num(uint64_t{h.connections})});
    }
  }
  return r;
}

AdminResult show_servers(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = connection_columns();
  r.columns.push_back({"driver", kText});
  for (const auto& pool : server.pools()) {
    const auto& c = pool->config();
    Target t = target_of(c);
    const std::string& user = pool->user();  // the pool's: its connections serve only that user
    for (const auto& s : pool->servers()) {
      // addr/port: the connection string's (NULL where it names none);
      // local_addr/local_port: the driver's socket (NULL for a Unix socket or
      // a driver without one); remote_pid: the server's pid for the session.
      const bool local = !s.local_addr.empty();
      // Several hosts: the one this connection opened on.
      const bool on_host = !s.host.empty();
      Row row{"S",
              user,
              c.name,
              s.leased ? "active" : "idle",
              on_host ? std::optional<std::string>(s.host) : t.host,
              on_host ? std::optional<std::string>(num(int64_t{s.port})) : t.port,
              local ? std::optional<std::string>(s.local_addr) : std::nullopt,
              local ? std::optional<std::string>(num(uint64_t{s.local_port})) : std::nullopt,
              timestamp(s.opened_at),
              timestamp(s.opened_at),
              "0",
              "0",
              "0",
              hex_id(s.id),
              std::nullopt,
              num(int64_t{s.server_pid}),
              std::nullopt,
              s.application_name,
              c.driver};
      r.rows.push_back(std::move(row));
    }
  }
  return r;
}

AdminResult show_stats(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"database", kText},          {"total_xact_count", kInt8},
               {"total_query_count", kInt8}, {"total_received", kInt8},
               {"total_sent", kInt8},        {"total_xact_time", kInt8},
               {"total_query_time", kInt8},  {"total_wait_time", kInt8},
               {"avg_xact_count", kInt8},    {"avg_query_count", kInt8},
               {"avg_recv", kInt8},          {"avg_sent", kInt8},
               {"avg_xact_time", kInt8},     {"avg_query_time", kInt8},
               {"avg_wait_time", kInt8},     {"driver", kText}};
  const uint64_t secs = std::chrono::duration_cast<std::chrono::seconds>(kStatsPeriod).count();
  auto add = [](StatsTotals& to, const StatsTotals& x) {
    to.xact_count += x.xact_count;
    to.query_count += x.query_count;
    to.received += x.received;
    to.sent += x.sent;
    to.xact_us += x.xact_us;
    to.query_us += x.query_us;
    to.wait_us += x.wait_us;
    to.wait_count += x.wait_count;
  };
  // As PgBouncer: one row per database, its users' pools summed.
  auto current = server.current_config();
  for (const auto& d : current->databases) {
    StatsTotals t, a, b;
    for (const auto& pool : server.pools_of(d.name)) {
      const auto& m = pool->metrics();
      add(t, m.totals());
      auto [pa, pb] = m.last_period();
      add(a, pa);
      add(b, pb);
    }
    auto per_second = [&](uint64_t end, uint64_t start) { return num((end - start) / secs); };
    auto average = [](uint64_t time, uint64_t count) { return num(count ? time / count : 0); };
    r.rows.push_back(
        Row{d.name, num(t.xact_count), num(t.query_count), num(t.received), num(t.sent),
            num(t.xact_us), num(t.query_us), num(t.wait_us), per_second(b.xact_count, a.xact_count),
            per_second(b.query_count, a.query_count), per_second(b.received, a.received),
            per_second(b.sent, a.sent), average(b.xact_us - a.xact_us, b.xact_count - a.xact_count),
            average(b.query_us - a.query_us, b.query_count - a.query_count),
            average(b.wait_us - a.wait_us, b.wait_count - a.wait_count), d.driver});
  }
  return r;
}

AdminResult show_databases(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"name", kText},
               {"host", kText},
               {"port", kInt8},
               {"database", kText},
               {"force_user", kText},
               {"pool_size", kInt8},
               {"min_pool_size", kInt8},
               {"reserve_pool", kInt8},
               {"pool_mode", kText},
               {"max_connections", kInt8},
               {"current_connections", kInt8},
               {"paused", kInt8},
               {"disabled", kInt8},
               {"driver", kText}};
  auto config = server.current_config();
  for (const auto& c : config->databases) {
    Target t = target_of(c);
    std::string user = backend_user(c);
    const uint64_t current = server.database_connections(c.name);
    const auto& settings = c.pool;
    r.rows.push_back(Row{c.name, t.host, t.port, t.database,
                         user.empty() ? std::nullopt : std::optional<std::string>(user),
                         num(int64_t{settings.max}), num(int64_t{settings.min}), "0",
                         std::string(config::to_string(settings.mode)),
                         num(int64_t{settings.max_db_connections}), num(current),
                         server.database_paused(c.name) ? "1" : "0", "0", c.driver});
  }
  return r;
}

AdminResult show_users(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"name", kText}, {"pool_mode", kText}, {"admin", kText}, {"databases", kText}};
  auto current = server.current_config();
  for (const auto& u : current->users) {
    std::string dbs;
    for (const auto& d : u.databases)
      dbs += (dbs.empty() ? "" : ",") + d;
    // A user has no pool mode of its own in wirepool: NULL, as PgBouncer shows
    // for a user without a per-user pool_mode.
    r.rows.push_back(Row{u.name, std::nullopt, u.admin ? "yes" : "no",
                         dbs.empty() ? std::optional<std::string>("*") : dbs});
  }
  // Users from the backend (auth_user, auth.mode passthrough), while they have
  // a pool: as many rows as such pools, which go once they have no client and
  // no connection.
  std::map<std::string, std::string> found;
  for (const auto& pool : server.pools()) {
    const std::string& name = pool->user();
    if (current->find_user(name) != nullptr) continue;
    std::string& dbs = found[name];
    dbs += (dbs.empty() ? "" : ",") + pool->config().name;
  }
  for (auto& [name, dbs] : found)
    r.rows.push_back(Row{name, std::nullopt, "no", std::move(dbs)});
  return r;
}

AdminResult show_lists(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"list", kText}, {"items", kInt8}};
  auto add = [&](std::string list, int64_t items) {
    r.rows.push_back(Row{std::move(list), num(items)});
  };
  const auto pools = server.pools();
  int64_t idle = 0, in_use = 0;
  for (const auto& p : pools) {
    const auto st = p->stats();
    idle += static_cast<int64_t>(st.idle);
    in_use += static_cast<int64_t>(st.in_use);
  }
  const auto current = server.current_config();
  add("databases", static_cast<int64_t>(current->databases.size()));
  add("users", static_cast<int64_t>(current->users.size()));
  add("pools", static_cast<int64_t>(pools.size()));
  add("used_clients", server.client_count());
  add("login_clients", server.pending_logins());
  add("free_servers", idle);
  add("used_servers", in_use);
  // wirepool's own: the login waiting room (session/admission.hpp), parked
  // connections and its capacity.
  add("login_waiting", server.waiting_logins());
  add("login_waiting_max", server.admission().limits().max_waiting);
  return r;
}

AdminResult show_config(Server& server) {
  AdminResult r;
  r.tag = "SHOW";
  r.columns = {{"key", kText}, {"value", kText}, {"default", kText}, {"changeable", kText}};
  const config::Server& s = server.config().server;
  const config::Server d;
  // changeable: whether RELOAD (or SIGHUP) applies a new value without a restart.
  auto add = [&](std::string key, std::string value, std::string def, bool changeable) {
    r.rows.push_back(
        Row{std::move(key), std::move(value), std::move(def), changeable ? "yes" : "no"});
  };
  add("threads", std::to_string(s.threads), std::to_string(d.threads), false);
  add("state_dir", s.state_dir, d.state_dir, false);
  add("log.level", s.log_level, d.log_level, false);
  add("log.format", std::string(config::to_string(s.log_format)),
      std::string(config::to_string(d.log_format)), false);
  add("max_clients", std::to_string(s.max_clients), std::to_string(d.max_clients), false);
  add("max_message_size", std::to_string(s.max_message_size), std::to_string(d.max_message_size),
      false);
  add("max_value_size", std::to_string(s.max_value_size), std::to_string(d.max_value_size), false);
  add("login_timeout", duration_text(s.login_timeout), duration_text(d.login_timeout), false);
  add("client_idle_timeout", duration_text(s.client_idle_timeout),
      duration_text(d.client_idle_timeout), false);
  add("idle_in_transaction_timeout", duration_text(s.idle_in_transaction_timeout),
      duration_text(d.idle_in_transaction_timeout), false);
  add("query_timeout", duration_text(s.query_timeout), duration_text(d.query_timeout), false);
  add("shutdown_grace", duration_text(s.shutdown_grace), duration_text(d.shutdown_grace), false);
  const auto& listeners = server.config().listeners;
  auto ports = server.bound_ports();
  for (size_t i = 0; i < listeners.size(); ++i) {
    const auto& l = listeners[i];
    std::string port = std::to_string(i < ports.size() ? ports[i] : l.port);
    add("listeners[" + std::to_string(i) + "]",
        std::string(config::to_string(l.protocol)) + " " + l.address + ":" + port + " tls " +
            std::string(config::to_string(l.tls)),
        "", false);
  }
  return r;
}

/// PAUSE: waits until the pools' backends are all released (as PgBouncer's
/// PAUSE returns once every server connection is idle), bounded by shutdown_grace.
asio::awaitable<bool> wait_released(Server& server, const std::vector<DatabasePoolPtr>& pools) {
  auto executor = co_await asio::this_coro::executor;
  auto deadline = std::chrono::steady_clock::now() + server.config().server.shutdown_grace;
  for (;;) {
    bool busy = false;
    for (const auto& p : pools)
      busy = busy || p->stats().in_use > 0;
    if (!busy) co_return true;
    if (std::chrono::steady_clock::now() >= deadline) co_return false;
    asio::steady_timer t(executor, std::chrono::milliseconds(20));
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace

std::string backend_user(const config::Database& d) {
  if (d.driver == "sqlite") return {};
  if (auto u = uri_parts(d.connection)) return u->user;
  return conninfo_value(d.connection, {"user", "uid", "user id"}).value_or("");
}

asio::awaitable<AdminResult> run_admin(Server& server, std::string_view command) {
  auto w = words(command);
  if (w.empty()) co_return done("");
  const std::string verb = upper(w[0]);
  spdlog::info("admin console: {}", command);
  if (verb == "SHOW") {
    if (w.size() != 2)
      co_return error("42601",
                      "SHOW needs one of POOLS CLIENTS SERVERS HOSTS STATS "
                      "DATABASES USERS LISTS CONFIG VERSION");
    const std::string what = upper(w[1]);
    if (what == "POOLS") co_return show_pools(server);
    if (what == "CLIENTS") co_return co_await show_clients(server);
    if (what == "SERVERS") co_return show_servers(server);
    if (what == "HOSTS") co_return show_hosts(server);
    if (what == "STATS") co_return show_stats(server);
    if (what == "DATABASES") co_return show_databases(server);
    if (what == "USERS") co_return show_users(server);
    if (what == "LISTS") co_return show_lists(server);
    if (what == "CONFIG") co_return show_config(server);
    if (what == "VERSION") {
      AdminResult r;
      r.tag = "SHOW";
      r.columns = {{"version", kText}};
      r.rows.push_back(Row{std::string("wirepool ") + kVersion});
      co_return r;
    }
    co_return error("42601", "unknown SHOW command: " + w[1]);
  }
  if (verb == "PAUSE" || verb == "RESUME" || verb == "RECONNECT") {
    if (w.size() > 2) co_return error("42601", verb + " takes at most one database name");
    std::string missing;
    auto pools = pools_for(server, w, &missing);
    if (!pools) co_return error("3D000", "database \"" + missing + "\" does not exist");
    if (verb == "PAUSE") {
      // The database's pools now and those its users get later.
      server.set_paused(w.size() > 1 ? w[1] : std::string_view(), true);
      if (!co_await wait_released(server, *pools)) {
        // Still paused: new work waits; the sessions in transactions keep theirs.
        co_return error("57014",
                        "PAUSE: backend connections still in use after shutdown_grace; "
                        "the pause stays in force (RESUME to lift it)");
      }
    } else if (verb == "RESUME") {
      server.set_paused(w.size() > 1 ? w[1] : std::string_view(), false);
    } else {
      for (const auto& p : *pools)
        p->reconnect();
    }
    co_return done(verb);
  }
  if (verb == "KILL") {
    if (w.size() != 2) co_return error("42601", "KILL needs a database name");
    if (!server.has_database(w[1])) {
      co_return error("3D000", "database \"" + w[1] + "\" does not exist");
    }
    // As PgBouncer: the database is paused (new clients wait for RESUME), its
    // clients are disconnected and its backend connections closed.
    server.set_paused(w[1], true);
    server.kill_clients(w[1]);
    for (const auto& pool : server.pools_of(w[1]))
      pool->reconnect();
    co_return done("KILL");
  }
  if (verb == "RELOAD" && w.size() == 1) {
    server.request_reload();
    co_return done("RELOAD");
  }
  if (verb == "SHUTDOWN" && w.size() == 1) {
    server.request_shutdown();
    co_return done("SHUTDOWN");
  }
  co_return error("42601",
                  "invalid admin command \"" + std::string(command) +
                      "\": use SHOW POOLS|CLIENTS|SERVERS|HOSTS|STATS|DATABASES|USERS|LISTS|CONFIG|"
                      "VERSION, PAUSE [db], RESUME [db], RECONNECT [db], KILL db, "
                      "RELOAD, SHUTDOWN");
}

}  // namespace wirepool::server
