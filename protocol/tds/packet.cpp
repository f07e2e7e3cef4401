// TDS packets: headers, message assembly, the packet writer (packet.hpp).
#include "protocol/tds/packet.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>

#include "protocol/tds/wire.hpp"

namespace wirepool::tds {

namespace {
using namespace wire;
}  // namespace

// ---------------------------------------------------------------------------
// Packets

std::string packet_type_name(uint8_t type) {
  switch (type) {
    case 1:
      return "SQL batch";
    case 2:
      return "pre-TDS7 login";
    case 3:
      return "RPC";
    case 4:
      return "tabular result";
    case 6:
      return "attention";
    case 7:
      return "bulk load";
    case 8:
      return "federated authentication token";
    case 14:
      return "transaction manager request";
    case 16:
      return "LOGIN7";
    case 17:
      return "SSPI";
    case 18:
      return "PRELOGIN";
    default:
      return "type " + std::to_string(type);
  }
}

bool packet_type_supported(uint8_t type) {
  switch (static_cast<PacketType>(type)) {
    case PacketType::sql_batch:
    case PacketType::rpc:
    case PacketType::attention:
    case PacketType::transaction_manager:
    case PacketType::login7:
    case PacketType::prelogin:
      return true;
    default:
      return false;
  }
}

std::optional<PacketHeader> peek_header(Bytes in) {
  if (in.size() < kHeaderSize) return std::nullopt;
  PacketHeader h;
  h.type = in[0];
  h.status = in[1];
  h.length = static_cast<uint16_t>((in[2] << 8) | in[3]);
  h.spid = static_cast<uint16_t>((in[4] << 8) | in[5]);
  h.packet_id = in[6];
  h.window = in[7];
  return h;
}

bool looks_like_tls(Bytes in) {
  return in.size() >= 2 && in[0] == 0x16 && in[1] == 0x03;
}

void MessageAssembler::set_packet_size(uint32_t size) {
  packet_size_ = std::clamp(size, kMinPacketSize, kMaxPacketSize);
}

namespace {
/// Wipes s's unused capacity beyond its first `keep` bytes (resize writes it
/// first, so the whole block is addressable).
void wipe_beyond(std::string& s, size_t keep) {
  s.resize(s.capacity());
  OPENSSL_cleanse(s.data() + keep, s.size() - keep);
  s.resize(keep);
}
/// Appends, moving to a larger block by hand so the old one is wiped before it is freed.
void append_wiped(std::string& s, std::string_view more) {
  if (s.capacity() - s.size() < more.size()) {
    std::string bigger;
    bigger.reserve(std::max(s.size() + more.size(), 2 * s.capacity()));
    bigger = s;
    wipe_beyond(s, 0);
    s.swap(bigger);
  }
  s.append(more);
}
}  // namespace

MessageAssembler::~MessageAssembler() {
  if (!wipe_) return;
  wipe_beyond(buf_, 0);
  wipe_beyond(partial_.payload, 0);
}

void MessageAssembler::set_wipe(bool on) {
  if (wipe_ && !on) {
    // What LOGIN7 left behind in the blocks kept: consumed bytes and the tails.
    if (pos_ > 0) buf_.erase(0, pos_);
    pos_ = 0;
    wipe_beyond(buf_, buf_.size());
    wipe_beyond(partial_.payload, partial_.payload.size());
  }
  wipe_ = on;
}

void MessageAssembler::feed(Bytes in) {
  if (!error_.empty()) return;
  if (pos_ > 0 && (pos_ == buf_.size() || pos_ >= 65536)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  const std::string_view more(reinterpret_cast<const char*>(in.data()), in.size());
  if (wipe_) {
    append_wiped(buf_, more);
  } else {
    buf_.append(more);
  }
}

void MessageAssembler::shrink() {
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  if (wipe_) wipe_beyond(buf_, buf_.size());
  buf_.shrink_to_fit();
  if (!in_message_) {
    if (wipe_) wipe_beyond(partial_.payload, 0);
    partial_.payload.clear();
    partial_.payload.shrink_to_fit();
  }
}

DecodeStatus MessageAssembler::next(Message& out, std::string& error) {
  auto fail_with = [&](std::string e) {
    error_ = std::move(e);
    error = error_;
    return DecodeStatus::error;
  };
  if (!error_.empty()) {
    error = error_;
    return DecodeStatus::error;
  }
  for (;;) {
    const Bytes avail = as_bytes(std::string_view(buf_).substr(pos_));
    const auto h = peek_header(avail);
    if (!h) return DecodeStatus::need_more;
    if (limits_.from_server ? h->type != static_cast<uint8_t>(PacketType::tabular_result) &&
                                  h->type != static_cast<uint8_t>(PacketType::prelogin)
                            : !packet_type_supported(h->type)) {
      return fail_with("unsupported TDS packet type " + std::to_string(h->type) + " (" +
                       packet_type_name(h->type) + ")");
    }
    if (h->length < kHeaderSize)
      return fail_with("TDS packet length " + std::to_string(h->length) + " is below 8");
    if (h->length > packet_size_)
      return fail_with("TDS packet of " + std::to_string(h->length) +
                       " bytes exceeds the packet size " + std::to_string(packet_size_));
    if (in_message_ && h->type != partial_.type)
      return fail_with("TDS packet of type " + std::to_string(h->type) +
                       " inside a message of type " + std::to_string(partial_.type));
    const size_t body = h->length - kHeaderSize;
    if ((in_message_ ? partial_.payload.size() : 0) + body > limits_.max_message)
      return fail_with("TDS message exceeds the limit of " + std::to_string(limits_.max_message) +
                       " bytes");
    if (avail.size() < h->length) return DecodeStatus::need_more;
    if (!in_message_) {
      partial_.type = h->type;
      partial_.status = h->status;
      partial_.payload.clear();
      in_message_ = true;
    }
    const std::string_view packet_body = std::string_view(buf_).substr(pos_ + kHeaderSize, body);
    if (wipe_) {
      append_wiped(partial_.payload, packet_body);
    } else {
      partial_.payload.append(packet_body);
    }
    pos_ += h->length;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    if ((h->status & status::kEom) == 0) continue;
    in_message_ = false;
    if ((h->status & status::kIgnore) != 0) {
      partial_.payload.clear();  // the client cancelled this message
      continue;
    }
    out = std::move(partial_);
    partial_ = Message{};
    return DecodeStatus::ok;
  }
}

void PacketWriter::set_packet_size(uint32_t size) {
  packet_size_ = std::clamp(size, kMinPacketSize, kMaxPacketSize);
}

void PacketWriter::write(std::string& out, PacketType type, std::string_view payload,
                         uint8_t first_status) const {
  const size_t max_body = packet_size_ - kHeaderSize;
  size_t off = 0;
  uint8_t id = 1;
  bool first = true;
  do {
    const size_t n = std::min(max_body, payload.size() - off);
    const bool last = off + n == payload.size();
    uint8_t st = last ? status::kEom : 0;
    if (first) st |= first_status;
    wire::put_u8(out, static_cast<uint8_t>(type));
    wire::put_u8(out, st);
    wire::put_u16be(out, static_cast<uint16_t>(n + kHeaderSize));
    wire::put_u16be(out, spid_);
    wire::put_u8(out, id++);
    wire::put_u8(out, 0);
    out.append(payload.substr(off, n));
    off += n;
    first = false;
  } while (off < payload.size());
}

}  // namespace wirepool::tds
