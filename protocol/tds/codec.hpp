#pragma once
// TDS 7.4 / 8.0 wire protocol, sans-I/O ([MS-TDS]): packets, PRELOGIN, LOGIN7,
// client requests (SQL batch, RPC, transaction manager, attention) and the
// server's token stream, in both directions so the front end (server/) and
// the SQL Server driver (backends/tds/) share one codec. Decoders take bytes and
// answer {ok, need_more, error} with what they consumed; encoders append to a
// std::string. No sockets, no timers, no logging here. docs/tds.md lists what
// is decoded, what is refused and why.
//
// Notes for the server side:
// - TDS 8.0 ("strict", tedious `encrypt: 'strict'`, ALPN tds/8.0): the client
//   starts TLS 1.3 at once; its first byte is a TLS handshake record (0x16, see
//   looks_like_tls()). After the handshake everything below runs inside TLS:
//   PRELOGIN (the answer's ENCRYPTION is informative; tedious 19 sends
//   ENCRYPTION = NOT_SUP there, see the strict_* captures), LOGIN7, requests.
// - TDS 7.x (FreeTDS, pytds, ODBC without strict): the client sends a cleartext
//   PRELOGIN; when both sides agree on encryption the TLS handshake records then
//   travel *inside* PRELOGIN packets (type 18) until TLS is established, and
//   after it TDS packets travel as TLS records. Wrapping and unwrapping those
//   handshake bytes is plain packet framing: PacketWriter::write(out,
//   PacketType::prelogin, tls_bytes) and MessageAssembler's payloads. The TDS
//   listener serves a 7.x client that completes TLS 1.3 so (tds-front-end.md).
// - A message's packets are assembled by header length and the EOM bit, never
//   by read boundaries; ATTENTION is an empty message of type 6.
// - Cancel: tedious 19 reads the cancelled request's response as one message
//   (up to EOM) and expects the attention acknowledgement — DONE with
//   done::kAttn — in the *next* message; an acknowledgement inside the same
//   message leaves it waiting until its cancel timeout (checked by
//   integration_tds_tedious).
// - The decoders of assembled messages (PRELOGIN, LOGIN7, SQL batch, RPC,
//   transaction manager) answer ok or error, never need_more: a message cut
//   short is malformed. Only TokenDecoder and decode_value stream.

#include "protocol/tds/login.hpp"
#include "protocol/tds/packet.hpp"
#include "protocol/tds/request.hpp"
#include "protocol/tds/tokens.hpp"
