#pragma once
// SQL Server driver internals: one TDS 8.0 transport. A TCP socket, TLS 1.3
// (ALPN tds/8.0) before the first TDS byte, and TDS packets over it.
//
// Blocking by design (docs/tds-driver.md "Why blocking"): the driver runs on
// the server's bounded executor like SQLite's. The socket itself is
// non-blocking and every wait is a poll(2) bounded by a deadline, in short
// slices so that a cancel() from another thread is noticed: the thread that is
// waiting then sends the ATTENTION itself, so the SSL object is only ever used
// by one thread.
//
// Writes: every packet is one SSL_write, hence one TLS record (SQL Server
// resets a connection when a packet spans two records); packets are at most
// 16,383 bytes. Reads: packets are cut from the TLS byte stream by their
// header, whatever the record boundaries, and their payloads appended to the
// token buffer the caller decodes from. The buffers are reserved once at open.

#include <openssl/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "backends/db.hpp"
#include "backends/tds/tds_options.hpp"
#include "protocol/tds/codec.hpp"
#include "tls/tls.hpp"

namespace wirepool::tdsdrv {

/// TLS records seen by all TDS driver connections of the process (for tests,
/// the benchmark and a debug log line). Sizes are TLS plaintext sizes.
struct RecordStats {
  uint64_t packets_written = 0;     ///< TDS packets written, each with one SSL_write
  uint64_t packet_max = 0;          ///< the largest packet written (bytes, header included)
  uint64_t records_written = 0;     ///< TLS records written after the handshake
  uint64_t record_written_max = 0;  ///< the largest: record length field (ciphertext)
  uint64_t records_read = 0;        ///< TLS records read after the handshake
  uint64_t record_read_max = 0;     ///< the largest: record length field (ciphertext)
  uint64_t record_read_bytes = 0;   ///< the sum of the read records' length fields
};
/// A snapshot of the process-wide counters.
RecordStats record_stats();

class Transport {
 public:
  using Clock = std::chrono::steady_clock;

  Transport() = default;
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /// TCP connect to host:port, TLS 1.3 handshake verified by `ctx` (CA, host
  /// name, pins). Errors answer Errc::connection (08001 for connect/TLS).
  db::Status open(const std::string& host, uint16_t port, const tls::ClientContext& ctx,
                  Clock::time_point deadline);

  /// Packet size used for writing (512..16383).
  void set_packet_size(uint32_t size);
  uint32_t packet_size() const { return writer_.packet_size(); }

  /// Writes one message as packets of at most packet_size(), one TLS record
  /// each. `first_status` goes on the first packet (RESETCONNECTION).
  db::Status send(tds::PacketType type, std::string_view payload, uint8_t first_status = 0);

  /// Reads at least one more packet of the current response and appends its
  /// payload to tokens(). Answers false (ok) when the response already ended
  /// (its EOM packet was read). Waits until `deadline`; cancel_requested()
  /// interrupts the wait with Errc::busy 57014 (the caller sends ATTENTION).
  db::Result<bool> read_packet(Clock::time_point deadline);
  /// True once the EOM packet of the current response has been read.
  bool response_complete() const { return eom_; }
  /// Starts a new response (after a request was sent).
  void begin_response() { eom_ = false; }

  /// Decoded-from token bytes: the caller erases what it consumed.
  std::string& tokens() { return tokens_; }

  /// cancel() from any thread: the next wait answers 57014 at its next slice.
  void request_cancel() { cancel_.store(true); }
  bool cancel_requested() const { return cancel_.load(); }
  void clear_cancel() { cancel_.store(false); }

  bool is_open() const { return ssl_ != nullptr && !broken_; }
  /// Marks the transport unusable (a protocol error or a timeout mid-response).
  void mark_broken() { broken_ = true; }
  void close();

 private:
  /// Waits for `events` on the socket until `deadline` (cancellable when `cancellable`).
  db::Status wait(short events, Clock::time_point deadline, bool cancellable);
  db::Status write_record(std::string_view bytes, Clock::time_point deadline);

  int fd_ = -1;
  tls::SslPtr ssl_;
  tds::PacketWriter writer_;
  std::string out_;  ///< one message's packets (reserved at open)
  std::string in_;   ///< received bytes not yet cut into packets
  size_t in_pos_ = 0;
  std::string tokens_;  ///< payload bytes of the current response
  bool eom_ = true;
  bool broken_ = false;
  std::atomic<bool> cancel_{false};
};

}  // namespace wirepool::tdsdrv
