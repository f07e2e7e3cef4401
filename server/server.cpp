#include "server/server.hpp"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <boost/asio/signal_set.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "server/log.hpp"
#include "server/pg_client.hpp"
#include "server/tds_client.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

// ---------------------------------------------------------------------------
// CancelRegistry

std::pair<int32_t, int32_t> CancelRegistry::add(std::weak_ptr<CancelTarget> target) {
  std::lock_guard lock(mu_);
  for (;;) {
    int32_t key[2];
    if (RAND_bytes(reinterpret_cast<unsigned char*>(key), sizeof key) != 1) {
      throw std::runtime_error("RAND_bytes failed");
    }
    int32_t pid = key[0] & 0x7fffffff;
    if (pid == 0 || entries_.count(pid)) continue;
    entries_.emplace(pid, Entry{key[1], std::move(target)});
    return {pid, key[1]};
  }
}

void CancelRegistry::remove(int32_t pid) {
  std::lock_guard lock(mu_);
  entries_.erase(pid);
}

bool CancelRegistry::cancel(int32_t pid, int32_t secret) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(pid);
  if (it == entries_.end() || it->second.secret != secret) return false;
  auto target = it->second.target.lock();
  if (!target) return false;
  // Under the lock: the target cannot unregister (and tear down) meanwhile.
  target->cancel_request();
  return true;
}

// ---------------------------------------------------------------------------

namespace {

std::string read_secret(const config::Database& d) {
  if (!d.password_env.empty()) {
    const char* v = std::getenv(d.password_env.c_str());
    if (!v) {
      throw std::runtime_error("database \"" + d.name + "\": environment variable " +
                               d.password_env + " is not set");
    }
    return v;
  }
  if (!d.password_file.empty()) {
    std::ifstream f(d.password_file);
    if (!f) {
      throw std::runtime_error("database \"" + d.name + "\": cannot read password_file " +
                               d.password_file);
    }
    std::string s;
    std::getline(f, s);
    return s;
  }
  return {};
}

size_t loop_count(const config::Config& cfg) {
  if (cfg.server.threads > 0) return static_cast<size_t>(cfg.server.threads);
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

size_t blocking_threads(const config::Config& cfg) {
  // One thread per backend connection that can be busy at once, plus a few for
  // opening and closing; bounded so a large configuration stays sane.
  size_t n = 4;
  for (const auto& d : cfg.databases)
    n += static_cast<size_t>(d.pool.max);
  return std::min<size_t>(n, 512);
}

}  // namespace

Server::Server(config::Config cfg)
    : cfg_(std::move(cfg)), users_(cfg_.users), blocking_(blocking_threads(cfg_)) {
  std::error_code ec;
  std::filesystem::create_directories(cfg_.server.state_dir, ec);
  if (ec) {
    throw std::runtime_error("cannot create state_dir " + cfg_.server.state_dir + ": " +
                             ec.message());
  }
  setup_tls();
  for (size_t i = 0; i < loop_count(cfg_); ++i)
    loops_.push_back(std::make_unique<Loop>());
  for (const auto& d : cfg_.databases) {
    const db::Driver* driver = db::find_driver(d.driver);
    if (!driver)
      throw std::runtime_error("database \"" + d.name + "\": unknown driver " + d.driver);
    db::OpenOptions o;
    o.connection = d.connection;
    o.password = read_secret(d);
    o.options = d.options;
    o.base_dir = cfg_.server.state_dir;
    o.tls_ca = d.tls.ca;
    o.tls_pins = d.tls.pin_sha256;
    pools_.emplace(d.name,
                   std::make_shared<DatabasePool>(d, *driver, std::move(o), blocking_, main_));
  }
}

Server::~Server() {
  stop_all();
}

DatabasePoolPtr Server::find_pool(std::string_view name) const {
  auto it = pools_.find(name);
  return it == pools_.end() ? nullptr : it->second;
}

bool Server::admit_client() {
  auto n = clients_.fetch_add(1) + 1;
  if (n > cfg_.server.max_clients) {
    clients_.fetch_sub(1);
    return false;
  }
  return true;
}

void Server::client_gone() {
  clients_.fetch_sub(1);
}

std::vector<uint16_t> Server::bound_ports() const {
  std::vector<uint16_t> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    out.push_back(a->local_endpoint(ec).port());
  }
  return out;
}

void Server::start_listeners() {
  for (size_t i = 0; i < cfg_.listeners.size(); ++i) {
    const auto& l = cfg_.listeners[i];
    std::string where = l.address + ":" + std::to_string(l.port);
    try {
      asio::ip::tcp::endpoint ep(asio::ip::make_address(l.address), static_cast<uint16_t>(l.port));
      auto acc = std::make_unique<asio::ip::tcp::acceptor>(main_);
      acc->open(ep.protocol());
      acc->set_option(asio::ip::tcp::acceptor::reuse_address(true));
      acc->bind(ep);
      acc->listen(asio::socket_base::max_listen_connections);
      acceptors_.push_back(std::move(acc));
    } catch (const boost::system::system_error& e) {
      throw std::runtime_error("cannot listen on " + where + ": " + e.code().message());
    }
    spdlog::info("listening for {} clients on {}:{}", config::to_string(l.protocol), l.address,
                 acceptors_.back()->local_endpoint().port());
  }
  for (size_t i = 0; i < acceptors_.size(); ++i)
    accept_loop(i);
}

void Server::accept_loop(size_t index) {
  if (draining_) return;
  Loop& loop = *loops_[next_loop_.fetch_add(1) % loops_.size()];
  auto sock = std::make_shared<ClientSocket>(loop.io.get_executor());
  acceptors_[index]->async_accept(*sock, [this, index, &loop, sock](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || draining_) return;
    if (ec) {
      spdlog::warn("accept failed: {}", ec.message());
      if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
        // Out of file descriptors: back off a little instead of spinning.
        auto t = std::make_shared<asio::steady_timer>(main_, std::chrono::milliseconds(100));
        t->async_wait([this, index, t](boost::system::error_code) { accept_loop(index); });
        return;
      }
    } else {
      const auto& l = cfg_.listeners[index];
      asio::post(loop.io, [this, &loop, &l, sock] {
        if (l.protocol == config::Protocol::tds) {
          TdsClient::start(std::make_shared<TdsClient>(*this, loop, std::move(*sock), l));
        } else {
          PgClient::start(std::make_shared<PgClient>(*this, loop, std::move(*sock), l));
        }
      });
    }
    accept_loop(index);
  });
}

void Server::start_sweep(Loop& loop) {
  loop.sweep_timer.expires_after(std::chrono::milliseconds(250));
  loop.sweep_timer.async_wait([this, &loop](boost::system::error_code ec) {
    if (ec) return;
    auto now = std::chrono::steady_clock::now();
    for (auto& c : loop.clients)
      c.sweep(now);
    start_sweep(loop);
  });
}

int Server::run() {
  start_listeners();
  for (auto& [name, pool] : pools_)
    pool->start();

  asio::signal_set signals(main_, SIGINT, SIGTERM, SIGHUP);
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](boost::system::error_code ec, int signo) {
      if (ec) return;
      on_signal(signo);
      wait_signal();
    });
  };
  wait_signal();

  for (auto& loop : loops_) {
    start_sweep(*loop);
    loop->thread = std::thread([l = loop.get()] {
      try {
        l->io.run();
      } catch (const std::exception& e) {
        spdlog::critical("event loop stopped: {}", e.what());
        std::abort();
      }
    });
  }
  spdlog::info("wirepool ready: {} event loop(s), {} blocking thread(s), {} database(s)",
               loops_.size(), blocking_.threads(), pools_.size());
  main_.run();
  stop_all();
  spdlog::info("wirepool stopped");
  return exit_code_;
}

void Server::setup_tls() {
  const auto& t = cfg_.tls;
  if (!t.present) return;
  namespace fs = std::filesystem;
  if (t.generate) {
    bool cert = fs::exists(t.certificate), key = fs::exists(t.key);
    if (!cert && !key) {
      std::string error;
      if (!tls::generate_self_signed(t.certificate, t.key, &error)) {
        throw std::runtime_error("cannot generate a TLS certificate: " + error);
      }
      spdlog::info("generated a self-signed TLS certificate {} (key {})", t.certificate, t.key);
    } else if (cert != key) {
      throw std::runtime_error("tls.generate: only one of " + t.certificate + " and " + t.key +
                               " exists; remove it or provide both");
    }
  }
  std::string error;
  auto ctx = tls::ServerContext::create(t, tls::kAlpnPostgresql, &error);
  if (!ctx) throw std::runtime_error(error);
  const auto& f = ctx->fingerprints();
  spdlog::info("TLS certificate {}: sha256 certificate {}, sha256 public-key {}", t.certificate,
               f.certificate, f.public_key);
  pg_tls_ = std::make_unique<tls::ServerContextHolder>(std::move(ctx));
  auto tds = tls::ServerContext::create(t, tls::kAlpnTds, &error);
  if (!tds) throw std::runtime_error(error);
  tds_tls_ = std::make_unique<tls::ServerContextHolder>(std::move(tds));
}

void Server::reload_tls() {
  if (!pg_tls_) {
    spdlog::info("SIGHUP: no TLS certificate configured; nothing to reload");
    return;
  }
  std::string error;
  if (pg_tls_->reload(cfg_.tls, &error) && tds_tls_->reload(cfg_.tls, &error)) {
    const auto& f = pg_tls_->current()->fingerprints();
    spdlog::info(
        "SIGHUP: TLS certificate reloaded (sha256 public-key {}); established sessions "
        "keep theirs",
        f.public_key);
  } else {
    spdlog::error("SIGHUP: TLS certificate not reloaded, the current one stays: {}", error);
  }
}

void Server::on_signal(int signo) {
  if (signo == SIGHUP) {
    // Configuration reload is a later work item; the certificate reloads now.
    reload_tls();
    return;
  }
  if (++signals_seen_ > 1) {
    spdlog::warn("second signal: exiting now");
    std::fflush(nullptr);
    std::_Exit(1);
  }
  spdlog::info("signal {}: draining (up to {} ms)", signo, cfg_.server.shutdown_grace.count());
  begin_drain();
}

void Server::begin_drain() {
  draining_ = true;
  for (auto& a : acceptors_) {
    boost::system::error_code ec;
    a->close(ec);
  }
  for (auto& loop : loops_) {
    asio::post(loop->io, [l = loop.get()] {
      for (auto& c : l->clients)
        c.drain();
    });
  }
  drain_deadline_ = std::chrono::steady_clock::now() + cfg_.server.shutdown_grace;
  check_drained();
}

void Server::check_drained() {
  auto remaining = clients_.load();
  auto now = std::chrono::steady_clock::now();
  if (remaining == 0) {
    // Every client left: close the backends cleanly, then stop (at most ~5 s).
    if (pool_close_waits_ == 0) {
      for (auto& [name, pool] : pools_)
        pool->shutdown();
    }
    bool busy = false;
    for (auto& [name, pool] : pools_) {
      auto s = pool->stats();
      busy = busy || s.opening + s.idle + s.in_use + s.resetting + s.closing > 0;
    }
    if (!busy || ++pool_close_waits_ > 50) {
      main_.stop();
      return;
    }
  } else if (now >= drain_deadline_) {
    spdlog::warn("shutdown_grace over: closing {} remaining client(s)", remaining);
    for (auto& loop : loops_) {
      asio::post(loop->io, [l = loop.get()] {
        for (auto& c : l->clients)
          c.terminate();
      });
    }
    drain_deadline_ = now + std::chrono::seconds(5);
  }
  drain_timer_.expires_after(std::chrono::milliseconds(100));
  drain_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) check_drained();
  });
}

void Server::stop_all() {
  for (auto& loop : loops_)
    loop->io.stop();
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
  blocking_.stop();
  blocking_.join();
}

}  // namespace wirepool::server
