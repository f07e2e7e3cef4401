#include "server/http.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "server/client_connection.hpp"
#include "wirepool_version.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

/// Counts the connection as open for as long as it lives.
struct Connected {
  ProtocolMetrics& m = metrics().protocol(ProtocolIndex::http);
  Connected() {
    m.accepted.fetch_add(1, std::memory_order_relaxed);
    m.connected.fetch_add(1, std::memory_order_relaxed);
  }
  ~Connected() { m.connected.fetch_sub(1, std::memory_order_relaxed); }
};

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

asio::awaitable<void> serve(Server& server, std::shared_ptr<ClientSocket> sock) {
  Connected counted;
  auto& m = counted.m;
  // The whole exchange is bounded: at the deadline the socket is closed, which
  // ends whatever read or write is pending. The timer's handler owns a
  // reference, so the socket outlives it.
  asio::steady_timer deadline(sock->get_executor(), kHttpTimeout);
  deadline.async_wait([sock](boost::system::error_code ec) {
    if (ec) return;
    boost::system::error_code ignored;
    sock->close(ignored);
  });

  boost::beast::flat_buffer buffer(kHttpHeaderLimit);
  http::request_parser<http::empty_body> parser;
  parser.header_limit(kHttpHeaderLimit);
  parser.body_limit(0);
  boost::system::error_code ec;
  size_t got = co_await http::async_read(*sock, buffer, parser,
                                         asio::redirect_error(asio::use_awaitable, ec));
  m.bytes_in.fetch_add(got, std::memory_order_relaxed);

  http::response<http::string_body> res;
  res.version(11);
  res.keep_alive(false);
  res.set(http::field::server, "wirepool");
  if (ec) {
    if (!sock->is_open() || ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset) {
      co_return;  // gone, or timed out: nobody to answer
    }
    // Too large, malformed, or with a body.
    metrics().error(ErrorReason::protocol_error);
    res.result(ec == http::error::header_limit ? http::status::request_header_fields_too_large
                                               : http::status::bad_request);
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = "bad request: " + ec.message() + "\n";
    res.prepare_payload();
  } else {
    const auto& req = parser.get();
    std::string_view target(req.target().data(), req.target().size());
    target = target.substr(0, target.find('?'));
    if (req.method() != http::verb::get) {
      res.result(http::status::method_not_allowed);
      res.set(http::field::allow, "GET");
      res.set(http::field::content_type, "text/plain; charset=utf-8");
      res.body() = "method not allowed\n";
    } else if (target == "/metrics") {
      res.result(http::status::ok);
      res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res.body() = render_metrics(server);
    } else if (target == "/healthz") {
      res.result(http::status::ok);
      res.set(http::field::content_type, "application/json");
      res.body() = "{\"status\":\"ok\"}\n";
    } else if (target == "/readyz") {
      std::string reason;
      bool ready = is_ready(server, &reason);
      res.result(ready ? http::status::ok : http::status::service_unavailable);
      res.set(http::field::content_type, "application/json");
      res.body() = ready ? "{\"ready\":true}\n"
                         : "{\"ready\":false,\"reason\":" + json_string(reason) + "}\n";
    } else {
      res.result(http::status::not_found);
      res.set(http::field::content_type, "text/plain; charset=utf-8");
      res.body() = "not found\n";
    }
    res.prepare_payload();
  }
  size_t put =
      co_await http::async_write(*sock, res, asio::redirect_error(asio::use_awaitable, ec));
  m.bytes_out.fetch_add(put, std::memory_order_relaxed);
  deadline.cancel();
  boost::system::error_code ignored;
  sock->shutdown(ClientSocket::shutdown_both, ignored);
  sock->close(ignored);
}

/// The `host` label of a backend host: host:port, or "(connection)" for the connection's own.
std::string host_label(const HostMonitor::HostInfo& h) {
  return h.host.empty() ? "(connection)" : h.host + ":" + std::to_string(h.port);
}

void add_line(std::string& out, std::string_view name, std::string_view labels, double value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, " %.17g\n", value);
  out += buf;
}

void add_line(std::string& out, std::string_view name, std::string_view labels, uint64_t value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

void add_line(std::string& out, std::string_view name, std::string_view labels, int64_t value) {
  add_line(out, name, labels, static_cast<uint64_t>(value < 0 ? 0 : value));
}

}  // namespace

void start_http(Server& server, ClientSocket socket, Admission::TicketPtr ticket) {
  auto sock = std::make_shared<ClientSocket>(std::move(socket));
  auto executor = sock->get_executor();
  // A request still unanswered when a newer connection needs its slot is cut.
  ticket->on_displaced([executor, weak = std::weak_ptr<ClientSocket>(sock)] {
    asio::post(executor, [weak] {
      if (auto s = weak.lock()) {
        metrics().refused(RefusedReason::displaced);
        boost::system::error_code ignored;
        s->close(ignored);
      }
    });
  });
  auto job = [&server, sock, t = std::shared_ptr<Admission::Ticket>(std::move(ticket))]()
      -> asio::awaitable<void> { co_await serve(server, sock); };
  asio::co_spawn(executor, std::move(job), asio::detached);
}

bool is_ready(const Server& server, std::string* reason) {
  if (server.draining()) {
    *reason = "shutting down";
    return false;
  }
  if (!server.listening()) {
    *reason = "listeners not open yet";
    return false;
  }
  std::string name, error;
  if (server.unreachable_database(&name, &error)) {
    // The driver's error names the backend's host and port: it goes to the
    // log, never to whoever may reach the HTTP listener.
    *reason = "database \"" + name + "\" cannot reach its backend";
    return false;
  }
  return true;
}

namespace {

// render_metrics()'s sections, in the order they are written.

/// The process and the build: version, configuration, uptime, memory, descriptors.
void render_process(std::string& out, Metrics& mx) {
  metric_header(out, "wirepool_build_info", "gauge", "Always 1; the labels say which build runs.");
  add_line(out, "wirepool_build_info", "version=\"" + label_value(kVersion) + "\"", uint64_t{1});
  metric_header(out, "wirepool_config_info", "gauge",
                "Always 1; sha256 is the hash of the configuration file in force.");
  add_line(out, "wirepool_config_info", "sha256=\"" + label_value(mx.config_hash()) + "\"",
           uint64_t{1});
  metric_header(out, "wirepool_config_reloads_total", "counter",
                "Configuration reloads (SIGHUP or RELOAD), by result.");
  add_line(out, "wirepool_config_reloads_total", "result=\"ok\"", mx.reloads(true));
  add_line(out, "wirepool_config_reloads_total", "result=\"failed\"", mx.reloads(false));
  const auto started = mx.started();
  metric_header(out, "wirepool_uptime_seconds", "gauge", "Seconds since the process started.");
  add_line(out, "wirepool_uptime_seconds", "",
           std::chrono::duration<double>(std::chrono::system_clock::now() - started).count());
  metric_header(out, "process_start_time_seconds", "gauge",
                "Start time of the process since the Unix epoch, in seconds.");
  add_line(out, "process_start_time_seconds", "",
           std::chrono::duration<double>(started.time_since_epoch()).count());
  metric_header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  add_line(out, "process_resident_memory_bytes", "", process_rss_bytes());
  metric_header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
  add_line(out, "process_open_fds", "", process_open_fds());
}

/// Client connections and bytes, by protocol.
void render_clients(std::string& out, Metrics& mx) {
  metric_header(out, "wirepool_client_connections", "gauge",
                "Client connections open now, by protocol and state: active (holding a backend "
                "connection), waiting (for a backend connection), idle (neither).");
  for (size_t p = 0; p < kProtocols; ++p) {
    const auto& c = mx.protocol(p);
    const std::string proto = "protocol=\"" + std::string(protocol_label(p)) + "\"";
    int64_t connected = c.connected.load(), waiting = c.waiting.load(), active = c.active.load();
    int64_t idle = std::max<int64_t>(0, connected - waiting - active);
    add_line(out, "wirepool_client_connections", proto + ",state=\"active\"", active);
    add_line(out, "wirepool_client_connections", proto + ",state=\"waiting\"", waiting);
    add_line(out, "wirepool_client_connections", proto + ",state=\"idle\"", idle);
  }
  struct Counter {
    const char* name;
    const char* help;
    std::atomic<uint64_t> ProtocolMetrics::*field;
  };
  static const Counter counters[] = {
      {"wirepool_client_connections_accepted_total", "Client connections accepted, by protocol.",
       &ProtocolMetrics::accepted},
      {"wirepool_client_received_bytes_total",
       "Bytes received from clients (after TLS decryption), by protocol.",
       &ProtocolMetrics::bytes_in},
      {"wirepool_client_sent_bytes_total", "Bytes sent to clients (before TLS), by protocol.",
       &ProtocolMetrics::bytes_out},
      {"wirepool_tls_handshakes_total", "Client TLS handshakes completed, by protocol.",
       &ProtocolMetrics::tls_handshakes},
      {"wirepool_tls_handshake_failures_total", "Client TLS handshakes that failed, by protocol.",
       &ProtocolMetrics::tls_failures},
  };
  for (const auto& c : counters) {
    metric_header(out, c.name, "counter", c.help);
    for (size_t p = 0; p < kProtocols; ++p) {
      add_line(out, c.name, "protocol=\"" + std::string(protocol_label(p)) + "\"",
               (mx.protocol(p).*c.field).load(std::memory_order_relaxed));
    }
  }
}

/// Errors sent, failures by reason, refused connections, pending logins.
void render_errors(std::string& out, Metrics& mx, const Server& server) {
  metric_header(out, "wirepool_errors_total", "counter",
                "Errors sent to clients, by SQLSTATE class (first two characters).");
  for (const auto& [cls, n] : mx.sqlstate_classes())
    add_line(out, "wirepool_errors_total", "sqlstate_class=\"" + label_value(cls) + "\"", n);
  metric_header(out, "wirepool_error_reasons_total", "counter",
                "Failures by reason: auth_failed (a login refused), pool_timeout (no backend "
                "connection within acquire_timeout), backend_lost (a backend connection broke "
                "under a session), protocol_error (a client broke its protocol).");
  for (size_t r = 0; r < kErrorReasons; ++r) {
    auto reason = static_cast<ErrorReason>(r);
    add_line(out, "wirepool_error_reasons_total",
             "reason=\"" + std::string(to_string(reason)) + "\"", mx.errors(reason));
  }
  metric_header(out, "wirepool_connections_refused_total", "counter",
                "Connections closed before logging in, by reason: allow_list, pending "
                "(max_pending_logins), pending_per_address, displaced (a newer connection took "
                "the slot of one still logging in after 1 s), descriptors (EMFILE), throttled "
                "(too many failed logins), auth_lookup, waited (its wait for a login slot "
                "reached login_timeout, or a full waiting room made way for another address).");
  for (size_t r = 0; r < kRefusedReasons; ++r) {
    auto reason = static_cast<RefusedReason>(r);
    add_line(out, "wirepool_connections_refused_total",
             "reason=\"" + std::string(to_string(reason)) + "\"", mx.refused_count(reason));
  }
  metric_header(out, "wirepool_pending_logins", "gauge",
                "Connections accepted and not logged in yet (HTTP requests included).");
  add_line(out, "wirepool_pending_logins", "", static_cast<uint64_t>(server.pending_logins()));
  metric_header(out, "wirepool_waiting_logins", "gauge",
                "Connections accepted and waiting for a login slot (the waiting room: no TLS, "
                "no read yet).");
  add_line(out, "wirepool_waiting_logins", "", static_cast<uint64_t>(server.waiting_logins()));
}

/// Whether each database's last attempt to open a backend succeeded.
void render_databases(std::string& out, const Server& server) {
  metric_header(out, "wirepool_database_reachable", "gauge",
                "1 when the last attempt to open a backend connection for the database succeeded "
                "(or none was made yet), 0 when it failed.");
  for (const auto& d : server.current_config()->databases) {
    add_line(out, "wirepool_database_reachable",
             "database=\"" + label_value(d.name) + "\",driver=\"" + label_value(d.driver) + "\"",
             uint64_t{server.database_reachable(d.name) ? 1u : 0u});
  }
}

/// A pool as the metrics of its database and user see it.
struct PoolView {
  std::string labels;
  pool::Stats stats;
  config::PoolSettings settings;
  DatabasePoolPtr pool;
};

/// Backend connections by state, per pool; answers the pools it rendered.
std::vector<PoolView> render_backend_connections(std::string& out, const Server& server) {
  std::vector<PoolView> views;
  for (const auto& pool : server.pools()) {
    PoolView v;
    v.labels = "database=\"" + label_value(pool->config().name) + "\",user=\"" +
               label_value(pool->user()) + "\",driver=\"" + label_value(pool->config().driver) +
               "\"";
    v.stats = pool->stats();
    v.settings = pool->settings();
    v.pool = pool;
    views.push_back(std::move(v));
  }
  metric_header(
      out, "wirepool_backend_connections", "gauge",
      "Backend connections now, by database, user and state: active (leased to a client), "
      "idle, opening, resetting, closing.");
  for (const auto& v : views) {
    add_line(out, "wirepool_backend_connections", v.labels + ",state=\"active\"",
             uint64_t{v.stats.in_use});
    add_line(out, "wirepool_backend_connections", v.labels + ",state=\"idle\"",
             uint64_t{v.stats.idle});
    add_line(out, "wirepool_backend_connections", v.labels + ",state=\"opening\"",
             uint64_t{v.stats.opening});
    add_line(out, "wirepool_backend_connections", v.labels + ",state=\"resetting\"",
             uint64_t{v.stats.resetting});
    add_line(out, "wirepool_backend_connections", v.labels + ",state=\"closing\"",
             uint64_t{v.stats.closing});
  }
  return views;
}

/// The hosts of databases with several: role, lag, failures.
void render_hosts(std::string& out, const Server& server) {
  const auto monitors = server.host_monitors();
  if (!monitors.empty()) {
    metric_header(out, "wirepool_backend_host_role", "gauge",
                  "1 for the role each backend host of a database with several has now "
                  "(primary, standby, banned, diverged, unknown), 0 for the others.");
    for (const auto& m : monitors) {
      for (const auto& h : m->snapshot()) {
        const std::string labels = "database=\"" + label_value(m->database()) + "\",host=\"" +
                                   label_value(host_label(h)) + "\"";
        for (auto role : {pool::HostRole::primary, pool::HostRole::standby, pool::HostRole::banned,
                          pool::HostRole::diverged, pool::HostRole::unknown}) {
          add_line(out, "wirepool_backend_host_role",
                   labels + ",role=\"" + std::string(pool::to_string(role)) + "\"",
                   uint64_t{h.role == role});
        }
      }
    }
    metric_header(out, "wirepool_backend_host_replay_lag_seconds", "gauge",
                  "A standby's replay lag as its last probe saw it (absent while unknown).");
    for (const auto& m : monitors) {
      for (const auto& h : m->snapshot()) {
        if (!h.lag) continue;
        add_line(out, "wirepool_backend_host_replay_lag_seconds",
                 "database=\"" + label_value(m->database()) + "\",host=\"" +
                     label_value(host_label(h)) + "\"",
                 static_cast<double>(h.lag->count()) / 1000.0);
      }
    }
    metric_header(out, "wirepool_backend_host_replay_lag_bytes", "gauge",
                  "WAL a standby has not replayed, by the primary's last probe (absent while "
                  "unknown).");
    for (const auto& m : monitors) {
      for (const auto& h : m->snapshot()) {
        if (!h.lag_bytes) continue;
        add_line(out, "wirepool_backend_host_replay_lag_bytes",
                 "database=\"" + label_value(m->database()) + "\",host=\"" +
                     label_value(host_label(h)) + "\"",
                 uint64_t{*h.lag_bytes});
      }
    }
    metric_header(out, "wirepool_backend_host_reads", "gauge",
                  "1 when a read-only database's pools open on the host (a standby within "
                  "max_replica_lag), else 0.");
    for (const auto& m : monitors) {
      if (!m->for_reads()) continue;
      for (const auto& h : m->snapshot()) {
        add_line(out, "wirepool_backend_host_reads",
                 "database=\"" + label_value(m->database()) + "\",host=\"" +
                     label_value(host_label(h)) + "\"",
                 uint64_t{h.reads});
      }
    }
    metric_header(out, "wirepool_backend_host_connections", "gauge",
                  "Backend connections of the database open on each host.");
    for (const auto& m : monitors) {
      for (const auto& h : m->snapshot()) {
        add_line(out, "wirepool_backend_host_connections",
                 "database=\"" + label_value(m->database()) + "\",host=\"" +
                     label_value(host_label(h)) + "\"",
                 uint64_t{h.connections});
      }
    }
    metric_header(out, "wirepool_backend_host_failures", "gauge",
                  "Failed probes or opens in a row of each backend host (its ban doubles with "
                  "each).");
    for (const auto& m : monitors) {
      for (const auto& h : m->snapshot()) {
        add_line(out, "wirepool_backend_host_failures",
                 "database=\"" + label_value(m->database()) + "\",host=\"" +
                     label_value(host_label(h)) + "\"",
                 uint64_t{h.failures});
      }
    }
  }
}

/// Each pool's limits, waits and histograms.
void render_pools(std::string& out, const std::vector<PoolView>& views) {
  metric_header(out, "wirepool_pool_max_connections", "gauge",
                "The pool's max: backend connections it may open, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pool_max_connections", v.labels,
             uint64_t(v.settings.max < 0 ? 0 : v.settings.max));
  metric_header(out, "wirepool_pool_waiting_clients", "gauge",
                "Clients waiting for a backend connection now, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pool_waiting_clients", v.labels, uint64_t{v.stats.waiting});
  metric_header(out, "wirepool_pool_longest_wait_seconds", "gauge",
                "How long the longest-waiting client has waited, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pool_longest_wait_seconds", v.labels,
             std::chrono::duration<double>(v.stats.longest_wait).count());
  metric_header(out, "wirepool_pool_exhausted_total", "counter",
                "Clients refused because no backend connection became free within "
                "acquire_timeout (53300), by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pool_exhausted_total", v.labels, v.stats.rejected_timeout_total);
  metric_header(out, "wirepool_pool_grants_total", "counter",
                "Backend connections handed to clients, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pool_grants_total", v.labels, v.stats.granted_total);
  metric_header(out, "wirepool_backend_connects_total", "counter",
                "Backend connections opened, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_backend_connects_total", v.labels, v.stats.opened_total);
  metric_header(out, "wirepool_pool_patience_opens_total", "counter",
                "Backend connections opened past pipeline_max because clients waiting for a "
                "train saw no progress for 50 ms, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pool_patience_opens_total", v.labels, v.stats.patience_opens_total);
  metric_header(out, "wirepool_backend_connect_failures_total", "counter",
                "Backend connection attempts that failed, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_backend_connect_failures_total", v.labels, v.stats.open_failed_total);
  metric_header(out, "wirepool_statements_total", "counter",
                "Client statements run (a simple query or an Execute, a TDS batch or RPC), by "
                "database.");
  for (const auto& v : views)
    add_line(out, "wirepool_statements_total", v.labels,
             v.pool->metrics().statements.load(std::memory_order_relaxed));
  metric_header(out, "wirepool_relayed_batches_total", "counter",
                "PostgreSQL client batches (a Query, or messages up to a Sync) sent to a "
                "PostgreSQL backend as bytes by the relay, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_relayed_batches_total", v.labels,
             v.pool->metrics().relayed.load(std::memory_order_relaxed));
  metric_header(out, "wirepool_pipelined_batches_total", "counter",
                "Relayed batches sent to a backend behind another client's running batch "
                "instead of waiting for an idle backend, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_pipelined_batches_total", v.labels,
             v.pool->metrics().pipelined.load(std::memory_order_relaxed));
  metric_header(out, "wirepool_batches_total", "counter",
                "Pipelined executions of one statement run as one parameter-array batch, by "
                "database.");
  for (const auto& v : views)
    add_line(out, "wirepool_batches_total", v.labels,
             v.pool->metrics().batches.load(std::memory_order_relaxed));
  metric_header(
      out, "wirepool_batched_executions_total", "counter",
      "Executions (one Bind and Execute each) that went in those batches, by database and user.");
  for (const auto& v : views)
    add_line(out, "wirepool_batched_executions_total", v.labels,
             v.pool->metrics().batched.load(std::memory_order_relaxed));
  metric_header(out, "wirepool_transactions_total", "counter",
                "Transactions ended (committed, rolled back, or one autocommit statement), by "
                "database.");
  for (const auto& v : views)
    add_line(out, "wirepool_transactions_total", v.labels,
             v.pool->metrics().transactions.load(std::memory_order_relaxed));
  metric_header(
      out, "wirepool_pool_acquire_wait_seconds", "histogram",
      "Time a client waited for a backend connection, granted or not, by database and user.");
  for (const auto& v : views)
    v.pool->metrics().acquire_wait.render(out, "wirepool_pool_acquire_wait_seconds", v.labels);
  metric_header(
      out, "wirepool_statement_duration_seconds", "histogram",
      "Client statement duration, from its arrival to its last result, by database and user.");
  for (const auto& v : views)
    v.pool->metrics().statement_duration.render(out, "wirepool_statement_duration_seconds",
                                                v.labels);
}

}  // namespace

std::string render_metrics(const Server& server) {
  std::string out;
  out.reserve(16 * 1024);
  auto& mx = metrics();
  render_process(out, mx);
  render_clients(out, mx);
  render_errors(out, mx, server);
  render_databases(out, server);
  const auto views = render_backend_connections(out, server);
  render_hosts(out, server);
  render_pools(out, views);
  return out;
}

}  // namespace wirepool::server
