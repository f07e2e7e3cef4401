// Side channels and COPY:
//  - notices (RAISE NOTICE / WARNING) reach EventSink::on_notice with severity,
//    SQLSTATE, message, detail and hint; without a sink they are dropped
//  - SET of a reported parameter (application_name, TimeZone) reaches
//    on_parameter once, after the call; server_parameters() lists the values
//    reported at connection time and since
//  - LISTEN/NOTIFY: a notification from another connection reaches
//    on_notification (pid, channel, payload) on the listener's next call
//  - COPY FROM STDIN in chunks, COPY TO STDOUT streamed back, counts in the
//    command tag; formats (text, binary) as CopyIn/OutResponse carry them; a
//    COPY TO finished before its end discards the rest; an aborted COPY FROM answers the server's
//    error and the connection goes on; COPY with a bad statement answers its error
//  - capabilities: non-blocking, multi-statement, every side channel, pg_native

#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

struct Recorder : db::EventSink {
  std::vector<db::Notice> notices;
  std::vector<db::ParameterChange> parameters;
  std::vector<db::Notification> notifications;
  void on_notice(const db::Notice& n) override { notices.push_back(n); }
  void on_parameter(const db::ParameterChange& p) override { parameters.push_back(p); }
  void on_notification(const db::Notification& n) override { notifications.push_back(n); }
};

class SideChannels : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    conn = open();
    ASSERT_TRUE(conn.set_event_sink(&sink).ok());
  }
  Recorder sink;
  Connection conn;
};

TEST_F(SideChannels, CapabilitiesSayNonBlockingWithEverySideChannel) {
  const db::Capabilities c = conn.capabilities();
  EXPECT_EQ(c.dialect, sql::Dialect::postgres);
  EXPECT_FALSE(c.blocking);
  EXPECT_TRUE(c.multi_statement && c.session_settings && c.notices && c.notifications && c.copy &&
              c.pg_native);
}

TEST_F(SideChannels, NoticesReachTheSink) {
  exec(conn,
       "DO $$ BEGIN RAISE NOTICE 'hello %', 42 USING DETAIL = 'some detail', HINT = 'a hint'; "
       "RAISE WARNING 'careful' USING ERRCODE = '01000'; END $$");
  ASSERT_EQ(sink.notices.size(), 2u);
  EXPECT_EQ(sink.notices[0].severity, "NOTICE");
  EXPECT_EQ(sink.notices[0].sqlstate, "00000");
  EXPECT_EQ(sink.notices[0].message, "hello 42");
  EXPECT_EQ(sink.notices[0].detail, "some detail");
  EXPECT_EQ(sink.notices[0].hint, "a hint");
  EXPECT_EQ(sink.notices[1].severity, "WARNING");
  EXPECT_EQ(sink.notices[1].sqlstate, "01000");
  ASSERT_TRUE(conn.set_event_sink(nullptr).ok());
  exec(conn, "DO $$ BEGIN RAISE NOTICE 'unseen'; END $$");
  EXPECT_EQ(sink.notices.size(), 2u);
}

TEST_F(SideChannels, ParameterChangesReachTheSinkAfterTheCall) {
  const auto initial = conn.impl()->server_parameters();
  std::map<std::string, std::string> params(initial.begin(), initial.end());
  EXPECT_EQ(params["application_name"], "");  // the server's default, as clients expect
  EXPECT_EQ(params["client_encoding"], "UTF8");
  EXPECT_EQ(params["server_version"].substr(0, 3), "15.");
  EXPECT_EQ(params["integer_datetimes"], "on");
  EXPECT_EQ(params.count("TimeZone"), 1u);
  EXPECT_TRUE(sink.parameters.empty());  // connection-time values are not changes

  exec(conn, "SET application_name = 'wp-test'");
  ASSERT_EQ(sink.parameters.size(), 1u);
  EXPECT_EQ(sink.parameters[0].name, "application_name");
  EXPECT_EQ(sink.parameters[0].value, "wp-test");
  exec(conn, "SET TimeZone = 'Europe/Paris'");
  ASSERT_EQ(sink.parameters.size(), 2u);
  EXPECT_EQ(sink.parameters[1].name, "TimeZone");
  EXPECT_EQ(sink.parameters[1].value, "Europe/Paris");
  exec(conn, "SET TimeZone = 'Europe/Paris'");  // unchanged: not reported again
  EXPECT_EQ(sink.parameters.size(), 2u);
  const auto now = conn.impl()->server_parameters();
  std::map<std::string, std::string> after(now.begin(), now.end());
  EXPECT_EQ(after["application_name"], "wp-test");
}

TEST_F(SideChannels, NotificationsFromAnotherConnectionAreDelivered) {
  exec(conn, "LISTEN wp_channel");
  Connection other = open();
  const int64_t other_pid = scalar(other, "SELECT pg_backend_pid()").i64;
  exec(other, "NOTIFY wp_channel, 'payload one'");
  exec(other, "SELECT pg_notify('wp_channel', 'payload two')");
  exec(conn, "SELECT 1");
  ASSERT_EQ(sink.notifications.size(), 2u);
  EXPECT_EQ(sink.notifications[0].channel, "wp_channel");
  EXPECT_EQ(sink.notifications[0].payload, "payload one");
  EXPECT_EQ(sink.notifications[0].pid, other_pid);
  EXPECT_EQ(sink.notifications[1].payload, "payload two");
  exec(conn, "UNLISTEN *");
}

TEST_F(SideChannels, CopyInThenOut) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int, name text)");
  auto in = blocking(conn, [&] { return conn.impl()->copy("COPY " + t + " FROM STDIN"); });
  ASSERT_TRUE(in.ok()) << in.error().message;
  ASSERT_TRUE(in.value()->is_input());
  EXPECT_EQ(in.value()->format(), 0);
  EXPECT_EQ(in.value()->column_formats(), (std::vector<int16_t>{0, 0}));
  EXPECT_EQ(conn.query("SELECT 1").error().code, Errc::busy);  // the stream holds the connection
  std::string chunk;
  for (int i = 1; i <= 5000; ++i) {
    chunk += std::to_string(i) + "\tname " + std::to_string(i) + "\n";
    if (i % 1000 == 0) {
      ASSERT_TRUE(blocking(conn, [&] { return in.value()->write(chunk); }).ok());
      chunk.clear();
    }
  }
  auto done = blocking(conn, [&] { return in.value()->finish(std::nullopt); });
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(done->tag, "COPY 5000");
  EXPECT_EQ(done->affected, 5000);
  EXPECT_EQ(scalar(conn, "SELECT count(*) FROM " + t).i64, 5000);

  auto out = blocking(conn, [&] {
    return conn.impl()->copy("COPY (SELECT * FROM " + t + " ORDER BY id) TO STDOUT");
  });
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_FALSE(out.value()->is_input());
  std::string data;
  int chunks = 0;
  for (;;) {
    auto r = blocking(conn, [&] { return out.value()->read(); });
    ASSERT_TRUE(r.ok()) << r.error().message;
    if (!r.value()) break;
    data += *r.value();
    ++chunks;
  }
  EXPECT_EQ(chunks, 5000);  // one row per CopyData
  EXPECT_EQ(data.substr(0, 9), "1\tname 1\n");
  auto end = blocking(conn, [&] { return out.value()->finish(std::nullopt); });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(end->tag, "COPY 5000");
  EXPECT_EQ(scalar(conn, "SELECT 6").i64, 6);

  auto binary = blocking(
      conn, [&] { return conn.impl()->copy("COPY " + t + " (id) TO STDOUT (FORMAT binary)"); });
  ASSERT_TRUE(binary.ok()) << binary.error().message;
  EXPECT_EQ(binary.value()->format(), 1);
  EXPECT_EQ(binary.value()->column_formats(), (std::vector<int16_t>{1}));
  auto header = blocking(conn, [&] { return binary.value()->read(); });
  ASSERT_TRUE(header.ok() && header.value());
  EXPECT_EQ(header.value()->substr(0, 11), std::string("PGCOPY\n\377\r\n\0", 11));
  auto rest = blocking(conn, [&] { return binary.value()->finish(std::nullopt); });
  ASSERT_TRUE(rest.ok()) << rest.error().message;  // the unread data is discarded
  EXPECT_EQ(rest->tag, "COPY 5000");
  EXPECT_EQ(scalar(conn, "SELECT 8").i64, 8);
}

TEST_F(SideChannels, AbortedAndFailedCopies) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int)");
  auto in = blocking(conn, [&] { return conn.impl()->copy("COPY " + t + " FROM STDIN"); });
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE(blocking(conn, [&] { return in.value()->write("1\n2\n"); }).ok());
  auto aborted = blocking(conn, [&] { return in.value()->finish(std::string("client gave up")); });
  ASSERT_FALSE(aborted.ok());
  EXPECT_EQ(aborted.error().sqlstate, "57014");
  EXPECT_NE(aborted.error().message.find("client gave up"), std::string::npos);
  EXPECT_EQ(scalar(conn, "SELECT count(*) FROM " + t).i64, 0);

  auto bad = blocking(conn, [&] { return conn.impl()->copy("COPY no_such_table FROM STDIN"); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().sqlstate, "42P01");
  auto bad_data = blocking(conn, [&] { return conn.impl()->copy("COPY " + t + " FROM STDIN"); });
  ASSERT_TRUE(bad_data.ok());
  ASSERT_TRUE(blocking(conn, [&] { return bad_data.value()->write("not a number\n"); }).ok());
  auto failed = blocking(conn, [&] { return bad_data.value()->finish(std::nullopt); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().sqlstate, "22P02");
  {  // a stream dropped without finish: the next call ends it
    auto dropped = blocking(conn, [&] { return conn.impl()->copy("COPY " + t + " FROM STDIN"); });
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(blocking(conn, [&] { return dropped.value()->write("5\n"); }).ok());
  }
  EXPECT_EQ(scalar(conn, "SELECT count(*) FROM " + t).i64, 0);
  auto through_query = query(conn, "COPY " + t + " TO STDOUT");
  ASSERT_FALSE(through_query.ok());
  EXPECT_EQ(through_query.error().code, Errc::unsupported);
  EXPECT_EQ(scalar(conn, "SELECT 7").i64, 7);
}

}  // namespace
}  // namespace wirepool::pg_it
