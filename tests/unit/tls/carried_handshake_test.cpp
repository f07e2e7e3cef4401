// A handshake carried by the caller (TDS 7.x wraps it in PRELOGIN packets):
//  - new_server_ssl_memory() completes a TLS 1.3 handshake whose bytes the test
//    moves by hand between memory BIOs;
//  - attach_socket() then moves the session onto a socket: reads return the
//    prefix (records received behind the handshake) first, then the socket's bytes,
//    and BIO_pending() counts the prefix still unread;
//  - writes go to the socket.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::TempDir;

/// Moves what `from` wrote (its wbio) into `to`'s rbio.
void pump(SSL* from, SSL* to) {
  char buf[16384];
  int n;
  while ((n = BIO_read(SSL_get_wbio(from), buf, sizeof buf)) > 0)
    BIO_write(SSL_get_rbio(to), buf, n);
}

/// Records `ssl` (a memory-BIO session) wrote, taken out of its wbio.
std::string drain(SSL* ssl) {
  std::string out;
  char buf[16384];
  int n;
  while ((n = BIO_read(SSL_get_wbio(ssl), buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  return out;
}

SSL* memory_client(const ClientContext& ctx) {
  SSL* ssl = SSL_new(ctx.native());
  std::string error;
  EXPECT_TRUE(ctx.prepare(ssl, "localhost", &error)) << error;
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(in, -1);
  BIO_set_mem_eof_return(out, -1);
  SSL_set_bio(ssl, in, out);
  return ssl;
}

TEST(CarriedHandshake, CompletesInMemoryThenReadsPrefixBeforeTheSocket) {
  TempDir dir;
  auto pair = test::generate_pair(dir, "server");
  std::string error;
  ServerContextPtr server_ctx = ServerContext::create(test::tls_config(pair), kAlpnTds, &error);
  ASSERT_TRUE(server_ctx) << error;
  ClientContextPtr client_ctx = ClientContext::create(pair.cert, {}, &error);
  ASSERT_TRUE(client_ctx) << error;

  SslPtr server(new_server_ssl_memory(*server_ctx));
  ASSERT_TRUE(server);
  SslPtr client(memory_client(*client_ctx));
  bool server_done = false, client_done = false;
  for (int round = 0; round < 10 && !(server_done && client_done); ++round) {
    if (!client_done) client_done = SSL_do_handshake(client.get()) == 1;
    pump(client.get(), server.get());
    if (!server_done) server_done = SSL_do_handshake(server.get()) == 1;
    pump(server.get(), client.get());
  }
  ASSERT_TRUE(server_done && client_done) << last_error(server.get());
  EXPECT_EQ(tls_version(server.get()), std::string_view("TLSv1.3"));

  // The client sends two records: the first arrived with the handshake (the
  // prefix), the second comes over the socket.
  ASSERT_EQ(SSL_write(client.get(), "first|", 6), 6);
  std::string prefix = drain(client.get());
  ASSERT_EQ(SSL_write(client.get(), "second", 6), 6);
  std::string later = drain(client.get());

  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ASSERT_TRUE(attach_socket(server.get(), fds[0], prefix));
  EXPECT_EQ(BIO_pending(SSL_get_rbio(server.get())), static_cast<int>(prefix.size()));
  ASSERT_EQ(write(fds[1], later.data(), later.size()), static_cast<ssize_t>(later.size()));

  std::string got;
  char buf[64];
  while (got.size() < 12) {
    int n = SSL_read(server.get(), buf, sizeof buf);
    ASSERT_GT(n, 0) << last_error(server.get());
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "first|second");
  EXPECT_EQ(BIO_pending(SSL_get_rbio(server.get())), 0);

  // Writes go to the socket.
  ASSERT_EQ(SSL_write(server.get(), "reply", 5), 5);
  char wire[4096];
  ssize_t n = read(fds[1], wire, sizeof wire);
  ASSERT_GT(n, 0);
  BIO_write(SSL_get_rbio(client.get()), wire, static_cast<int>(n));
  int r = SSL_read(client.get(), buf, sizeof buf);
  ASSERT_EQ(r, 5);
  EXPECT_EQ(std::string(buf, 5), "reply");
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace wirepool::tls
