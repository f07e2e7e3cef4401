#pragma once
// What every client connection has, whatever protocol it speaks (PostgreSQL,
// TDS): the socket, TLS once negotiated, the read buffer, the output buffer,
// and the I/O deadline that the loop's sweep enforces. The protocol classes
// derive from it and keep only their protocol.

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "server/metrics.hpp"
#include "server/result_pump.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "session/auth.hpp"
#include "session/login_policy.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

/// Reads start at this size; larger messages grow the buffer to their length.
inline constexpr size_t kReadChunk = 8 * 1024;
/// A client's first read after an idle wait: most requests are small, and a
/// block this size comes from malloc's per-thread cache, where 8 KiB does not.
inline constexpr size_t kFirstRead = 1000;
/// A client that stops mid-message or stops reading results for this long is closed.
inline constexpr auto kIoTimeout = std::chrono::seconds(60);
/// How long a failed login waits before it is answered (it slows guessing
/// down and hides which check refused).
inline constexpr auto kLoginFailureDelay = std::chrono::milliseconds(250);

/// Thrown when the client's socket fails while a result is being sent; caught
/// by the protocol's serve(), which ends the connection.
struct ClientGone {};

/// An error for the client, as a driver would report it.
db::Error make_error(std::string_view sqlstate, std::string message,
                     db::Errc code = db::Errc::invalid_query);

/// auth.mode passthrough: why `user` cannot be passed to the backend as a
/// role name (over NAMEDATALEN - 1 bytes, which PostgreSQL would cut; not
/// UTF-8; a control character), else nullopt. Checked before the password.
std::optional<std::string> passthrough_user_refusal(std::string_view user);

/// The read buffer: allocated while a message is arriving, released while the
/// client is idle so that an idle client holds no buffer.
class InBuffer {
 public:
  InBuffer() = default;
  InBuffer(const InBuffer&) = delete;
  InBuffer& operator=(const InBuffer&) = delete;
  ~InBuffer();
  /// On until login: bytes that may hold a password are wiped before their
  /// memory is freed or left unused.
  void set_wipe(bool on);
  bool empty() const { return begin_ == end_; }
  size_t size() const { return end_ - begin_; }
  std::span<const uint8_t> view() const { return {data_.get() + begin_, end_ - begin_}; }
  void consume(size_t n);
  /// Makes room for at least `n` more bytes (compacting first).
  void reserve_tail(size_t n);
  uint8_t* tail() { return data_.get() + end_; }
  size_t space() const { return cap_ - end_; }
  size_t capacity() const { return cap_; }
  void commit(size_t n) { end_ += n; }
  void release();

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t begin_ = 0, end_ = 0, cap_ = 0;
  bool wipe_ = true;
};

class ClientConnection : public Client {
 public:
  /// The loop's sweep: the I/O deadline, and the statement deadline of the
  /// session's running statement (cancelled as a timeout); a statement whose
  /// client left is cancelled too.
  void sweep(TimePoint now) override;
  /// Stop taking work: an idle client outside a transaction is closed at once
  /// (the protocol's resume sees draining_), others after their transaction.
  void drain() override;
  /// The grace is over: closed now, its running statement cancelled.
  void terminate() override;

  /// Serves a new connection on its loop, whatever its protocol: the login,
  /// then its requests until it leaves (`client` keeps it alive meanwhile).
  static void start(std::shared_ptr<ClientConnection> client);
  /// At exit, its loop stopped: a parked client's hold on itself (the caller
  /// drops it once done walking the loop's clients), else null.
  std::shared_ptr<ClientConnection> leave_park_for_exit();

 protected:
  /// `protocol`: where its connection, byte and TLS counts go (/metrics);
  /// `ticket`: its place among the connections (pending until it logs in).
  ClientConnection(Loop& loop, ClientSocket socket, ProtocolIndex protocol,
                   Admission::TicketPtr ticket);
  ~ClientConnection() override;

  /// The client's bytes, through TLS once negotiated; never waits: on
  /// would_block, want_write_ says which readiness to wait for.
  size_t io_read(uint8_t* data, size_t size, boost::system::error_code& ec);
  size_t io_write(const uint8_t* data, size_t size, boost::system::error_code& ec);
  /// Reads at least one more byte into in_ (`want`: bytes the pending message
  /// needs, a sizing hint). Waits are bounded by io_deadline_ when one is set
  /// (the login deadline), else by kIoTimeout. False on EOF, error or timeout.
  boost::asio::awaitable<bool> read_more(size_t want);
  /// Reads what the socket (through TLS) has now into in_, making room for
  /// `reserve` bytes first; never waits. The bytes read, 0 when nothing was
  /// there (a readiness wake-up can find them gone: the reactor may report an
  /// event it collected before an earlier read took the bytes), nullopt on EOF
  /// or an error.
  std::optional<size_t> read_now(size_t reserve = kReadChunk);
  /// Writes all of out_ (bounded by kIoTimeout) and clears it. False if the
  /// client is gone.
  boost::asio::awaitable<bool> flush();
  /// flush() without a wait: `all` written (out_ cleared), `blocked` (what
  /// was written is gone from out_; flush() writes the rest), or `gone`.
  enum class Flushed : uint8_t { all, blocked, gone };
  Flushed try_flush();
  /// flush() that waits at most `patience`: `blocked` when the client has not
  /// taken all of out_ by then (what it took is gone from out_).
  boost::asio::awaitable<Flushed> flush_for(std::chrono::milliseconds patience);
  /// Sends a result (server/result_pump.cpp): runs `pump` on the session's
  /// backend into `out` until it is done, reaches `limit` rows (0: none) or
  /// fails (`err`), writing out_ between chunks; `first` is what the job that
  /// opened the result already fetched. A cancel between chunks ends it with
  /// 57014; a client gone mid-result closes the reader and throws ClientGone.
  boost::asio::awaitable<Pumped> pump_result(ResultPump& pump, RowSink& sink, std::string& out,
                                             int64_t limit, db::Error& err, Pumped first);
  /// Before pump_result writes out_: moves what `out` holds into out_ (TDS
  /// frames its tokens into packets).
  virtual void frame_output() {}
  /// The protocol's own reason to stop a result between chunks.
  virtual bool result_stopped() const { return false; }
  /// Writes out_ from `off` on until it would block (`off` advanced), all is
  /// written (out_ cleared) or the client is gone (out_ cleared): the one
  /// write loop of flush() and try_flush().
  Flushed write_out(size_t& off);
  /// The TLS handshake on the socket with `context` (SSL_accept, bounded by
  /// io_deadline_). On success ssl_ is the session; on failure a log line says
  /// why and ssl_ is reset.
  boost::asio::awaitable<bool> tls_accept(const tls::ServerContextPtr& context);
  /// Adopts a TLS session whose handshake was carried some other way (TDS 7.x
  /// wraps it in PRELOGIN packets): from now on it reads and writes the socket,
  /// `prefix` (records already read behind the handshake) first.
  bool adopt_tls(const tls::ServerContextPtr& context, tls::SslPtr ssl, std::string prefix);
  /// True when the socket (or TLS) has bytes to read without waiting.
  bool tls_pending() const;
  /// The deadline passed: cancels the socket's waits and sets timed_out_.
  void expire_io(TimePoint now);
  /// Arranges for a newer connection taking this one's pending slot
  /// (Admission) to close it on its own loop, as a login timeout would.
  void watch_displacement(const std::shared_ptr<ClientConnection>& self);
  /// Waits until `t` (bounded by kIoTimeout); a refusal's answer waits for
  /// its moment this way.
  boost::asio::awaitable<void> wait_until(TimePoint t);
  /// A refused login's bookkeeping, the same for every protocol: counted
  /// (metrics, throttle), logged with its real reason and without the
  /// password, then kLoginFailureDelay after `answer_at` before the one
  /// answer every reason gets (it slows guessing and hides which check refused).
  boost::asio::awaitable<void> login_failure(Server& server, const std::string& user,
                                             const std::string& reason, TimePoint answer_at);
  /// What a backend login as the client's own role said of its password.
  struct BackendCheck {
    enum class Verdict : uint8_t {
      ok,           ///< logged in (or the pool holds this password): held in credentials_hold_
      refused,      ///< a wrong password (or one refused unchecked): a failed login
      unavailable,  ///< no verdict (the backend is down, full, starting): `sqlstate`
      no_database,  ///< the database was removed meanwhile
    };
    Verdict verdict = Verdict::refused;
    std::string sqlstate;  ///< unavailable: 08006, or the backend's 57P*/53*
    std::string reason;    ///< for the log (never the password)
  };
  /// auth.mode passthrough: checks `password` by a backend login as `user` on
  /// `database`'s user pool, unless the pool holds that password already.
  /// A password empty, with a NUL, or over kMaxPassthroughPassword bytes is
  /// refused unchecked.
  boost::asio::awaitable<BackendCheck> check_on_backend(Server& server, const std::string& user,
                                                        const std::string& database,
                                                        const std::string& password);
  /// Longer passwords are refused unchecked (no real password comes near).
  static constexpr size_t kMaxPassthroughPassword = 1024;
  /// The client has logged in: its bytes no longer carry a password, so read
  /// buffers and TLS plaintext stop being wiped.
  void login_done();
  /// The client's address as the login limits count it.
  const AddressKey& address() const { return address_; }
  /// Why `user`'s certificate requirement refuses this client's certificate
  /// (session/login_policy.hpp); nullopt when it does not.
  std::optional<std::string> certificate_refusal(const UserRecord& user,
                                                 const config::Tls& tls) const;
  /// The idle wait ended (data, a timeout, the drain, an error): resume() runs
  /// in a fresh coroutine. Protocols wait for an idle client with
  /// socket_.async_wait and this as the handler, so an idle client holds no
  /// coroutine frame.
  void on_readable(boost::system::error_code ec);
  /// Starts the idle wait with on_readable as its end. `self` keeps the
  /// connection alive until then.
  ///
  /// Cold (the default): a one-byte MSG_PEEK receive, so that an idle client
  /// holds no buffer; read_now then takes the bytes. A receive rather than
  /// async_wait: asio re-arms epoll (an epoll_ctl system call) for every
  /// async_wait, while a receive on a socket it already watches does not.
  ///
  /// `hot` (a plaintext client that has just been answered): the wait is a
  /// receive into in_ itself, so the request arrives with the wake-up and
  /// the peek's second recv is saved (docs/performance-notes.md). in_ (and
  /// the protocol's out_) are kept while the client stays hot; the sweep
  /// turns a hot wait that lasted kHotSweeps sweeps into a cold one and
  /// releases both. TLS clients always wait cold (their bytes are records
  /// for OpenSSL to read).
  ///
  /// `park_now`: the client is parked at once (after login, when a client
  /// that was served nothing is likely to stay idle).
  void wait_idle(std::shared_ptr<ClientConnection> self, bool hot = false, bool park_now = false);
  /// Sweeps an idle wait lasts in Asio's reactor (hot or cold) before the
  /// client is parked (park()).
  static constexpr int kHotSweeps = 4;
  /// Moves a long-idle client out of Asio's reactor into its loop's IdlePark:
  /// the socket is released (Asio frees its descriptor state) and no
  /// operation is pending, so the client holds only itself. It comes back
  /// (unpark()) when the socket is readable, or on a cancel of its waits;
  /// on_readable then sees what the cold wait's peek would have seen.
  void park(std::shared_ptr<ClientConnection> self);
  /// Gives a parked socket back to Asio and ends the wait with `ec`
  /// (success: its readiness is checked with a peek, as the cold wait does).
  void unpark(boost::system::error_code ec);
  static void on_park_ready(void* who);
  /// Cancels the socket's waits, a parked one included.
  void cancel_waits();
  /// The socket's descriptor, parked or not.
  int native_fd() const { return fd_; }
  /// Takes what the hot idle wait received (true: the bytes are in in_, and
  /// the socket had no more), else false: the caller reads.
  bool take_hot_read() { return std::exchange(hot_read_, false); }
  /// Sets io_deadline_ for the idle wait: `server`'s idle_in_transaction_timeout
  /// inside a transaction, else its client_idle_timeout (none when 0).
  void arm_idle_deadline(const config::Server& server);
  /// Why an idle wait ended, as resume() sees it: a request to serve, the idle
  /// deadline (logged here; timed_out_ cleared), shutdown or a drain outside a
  /// transaction, or a socket error.
  enum class IdleEnd : uint8_t { request, timeout, shutdown, error };
  IdleEnd idle_end(boost::system::error_code ec);
  /// The protocol's login (false: refused or gone; the connection then ends).
  virtual boost::asio::awaitable<bool> login() = 0;
  /// Serves a logged-in client until it leaves (or goes idle without a coroutine).
  virtual boost::asio::awaitable<void> serve_logged_in() = 0;
  /// Closes readers, releases the backend, closes the socket.
  virtual boost::asio::awaitable<void> end() = 0;
  /// The connection's coroutine: login, then serve_logged_in, or end.
  boost::asio::awaitable<void> run(std::shared_ptr<ClientConnection> self);
  /// Goes on after the idle wait: the protocol serves the client or ends it.
  virtual boost::asio::awaitable<void> resume(boost::system::error_code ec) = 0;
  /// A protocol's way to go on without a coroutine: true when it took the
  /// wake-up (and started the next wait or a coroutine itself), false to
  /// have resume() run.
  virtual bool resume_now(boost::system::error_code) { return false; }
  /// Sends close_notify (best effort, never waits), shuts the socket down and closes it.
  void close_transport();
  /// Fills what every connection knows of `out` (addresses, times, TLS) and,
  /// with a session, its user, database and state.
  void describe_connection(ClientInfo& out, const Session* session) const;

  Loop& loop_;
  ProtocolMetrics& counters_;  ///< this client's protocol's counters
  /// The users in force when it began to log in (its UserRecord lives there).
  std::shared_ptr<const UserStore> users_;
  /// A user found by its database's auth_query, or the client's own role on
  /// an auth.mode passthrough database (its UserRecord), else null.
  std::shared_ptr<const UserRecord> backend_user_;
  /// auth.mode passthrough: its hold on the password its user pool keeps
  /// while the pool has clients.
  std::shared_ptr<void> credentials_hold_;
  /// Its database's counters once logged in (SHOW STATS' bytes), else nullptr.
  DatabaseMetrics* db_counters_ = nullptr;
  /// When it connected (SHOW CLIENTS' connect_time).
  const std::chrono::system_clock::time_point connected_at_ = std::chrono::system_clock::now();
  /// The client closed its end (or the connection broke), seen without a read.
  bool hung_up();

  /// SHOW CLIENTS' ptr: a number in order of connection, not an address (which
  /// would tell a reader where the heap is).
  static inline std::atomic<uint64_t> next_id_{1};
  const uint64_t id_ = next_id_.fetch_add(1, std::memory_order_relaxed);
  ClientSocket socket_;
  std::string peer_;  ///< "address:port", for log lines
  AddressKey address_{};
  // In the padding after address_.
  bool v6_ = false;      ///< the socket's protocol, to give a parked one back to Asio
  bool parked_ = false;  ///< in loop_.park, out of Asio (socket_ is closed meanwhile)
  int fd_ = -1;          ///< the socket's descriptor, parked or not
  Admission::TicketPtr ticket_;
  InBuffer in_;
  std::string out_;
  /// Bytes of out_ written to the client since the connection began.
  uint64_t out_sent_ = 0;
  tls::ServerContextPtr tls_ctx_;  ///< the context ssl_ was made from (outlives ssl_)
  tls::SslPtr ssl_;                ///< the client's TLS session, when it has one
  std::optional<TimePoint> io_deadline_;
  /// The client's session once logged in (none for the admin console).
  std::unique_ptr<Session> session_;
  // The flags together after the pointers: one padded word for all of them.
  /// out_ holds a complete answer (up to a ReadyForQuery): it goes out before
  /// any wait for more work, as PostgreSQL flushes at each ReadyForQuery.
  bool answered_ = false;
  bool want_write_ = false;  ///< what the last would_block waits for
  bool timed_out_ = false;
  bool idle_wait_ = false;    ///< waiting for the client between requests
  uint8_t peeked_ = 0;        ///< where wait_idle's MSG_PEEK receive puts the byte it sees
  bool hot_wait_ = false;     ///< the idle wait is a receive into in_
  bool hot_read_ = false;     ///< it received the client's bytes (take_hot_read)
  bool cooling_ = false;      ///< the sweep cancelled it to wait cold
  uint8_t hot_sweeps_ = 0;    ///< sweeps the hot wait has lasted
  bool draining_ = false;     ///< shutdown or reload: finish, then close
  bool terminating_ = false;  ///< shutdown_grace is over
  /// Keeps a parked client alive: no pending operation holds it meanwhile.
  std::shared_ptr<ClientConnection> park_self_;

 private:
  size_t tls_error(int result, boost::system::error_code& ec);
  void count_in(size_t n);
  void count_out(size_t n);
};

}  // namespace wirepool::server
