// The relay's sans-I/O half (protocol/pg/relay.hpp).
//
// Cases:
// - scan_batch: a Query alone; P/B/D/E/S up to the first Sync (what follows is
//   left); incomplete at every split point; a Query after extended messages,
//   Flush, CopyData and unknown types unsuitable; lengths below 4 and above
//   max_len unsuitable from the header; more than kMaxBatch messages unsuitable;
// - light parses and encoders: Parse/Bind/Describe/Execute round trips through
//   the codec's decoder; malformed bodies refused;
// - error_field and put_error_as_error (FATAL becomes ERROR, the message
//   replaced, other fields kept);
// - Tracker: the answers of a prepared execution with an added Parse (its
//   ParseComplete swallowed), ParseComplete emitted in order for a known
//   statement, an error skipping to the Sync (synthetic answers dropped, tags
//   unconfirmed), a Query with several results and an error, notices anywhere,
//   COPY and stray messages unexpected.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/pg/codec.hpp"
#include "protocol/pg/relay.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"

namespace wirepool::pg::relay {
namespace {

using test::ByteBuilder;
using test::concat;
using test::frame;

std::vector<uint8_t> query(std::string_view sql) {
  return frame('Q', ByteBuilder().cstr(sql));
}
std::vector<uint8_t> parse_msg(std::string_view name, std::string_view sql,
                               std::vector<uint32_t> oids = {}) {
  ByteBuilder b;
  b.cstr(name).cstr(sql).i16(static_cast<int16_t>(oids.size()));
  for (auto o : oids)
    b.u32(o);
  return frame('P', b);
}
std::vector<uint8_t> bind_msg(std::string_view stmt) {
  return frame('B', ByteBuilder().cstr("").cstr(stmt).i16(0).i16(1).i32(2).raw("42").i16(0));
}
std::vector<uint8_t> execute_msg(int32_t max_rows = 0) {
  return frame('E', ByteBuilder().cstr("").i32(max_rows));
}
std::vector<uint8_t> sync_msg() {
  return frame('S', ByteBuilder());
}

Bytes view(const std::vector<uint8_t>& v) {
  return {v.data(), v.size()};
}

TEST(RelayScan, QueryAloneAndExtendedUpToSync) {
  std::vector<Frame> frames;
  auto q = concat({query("SELECT 1"), query("SELECT 2")});
  ASSERT_EQ(scan_batch(view(q), 1 << 20, frames), Scan::complete);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].type, 'Q');
  EXPECT_EQ(frames[0].size, query("SELECT 1").size());

  auto ext =
      concat({parse_msg("", "SELECT $1"), bind_msg(""), frame('D', ByteBuilder().u8('P').cstr("")),
              execute_msg(), sync_msg(), query("SELECT 3")});
  ASSERT_EQ(scan_batch(view(ext), 1 << 20, frames), Scan::complete);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames.back().type, 'S');
  EXPECT_EQ(frames.back().offset + frames.back().size, ext.size() - query("SELECT 3").size());
}

TEST(RelayScan, IncompleteAtEverySplit) {
  auto ext = concat({parse_msg("s", "SELECT 1"), bind_msg("s"), execute_msg(), sync_msg()});
  std::vector<Frame> frames;
  for (size_t cut = 0; cut < ext.size(); ++cut) {
    EXPECT_EQ(scan_batch(Bytes(ext.data(), cut), 1 << 20, frames), Scan::incomplete) << cut;
  }
  EXPECT_EQ(scan_batch(view(ext), 1 << 20, frames), Scan::complete);
}

TEST(RelayScan, UnsuitableMessagesAndLengths) {
  std::vector<Frame> frames;
  auto q_inside = concat({parse_msg("", "SELECT 1"), query("SELECT 1")});
  EXPECT_EQ(scan_batch(view(q_inside), 1 << 20, frames), Scan::unsuitable);
  for (char t : {'H', 'd', 'c', 'f', 'F', 'X', 'p', 'z'}) {
    auto m = concat({parse_msg("", "SELECT 1"), frame(t, ByteBuilder())});
    EXPECT_EQ(scan_batch(view(m), 1 << 20, frames), Scan::unsuitable) << t;
  }
  auto short_len = test::frame_with_length('Q', 3, ByteBuilder());
  EXPECT_EQ(scan_batch(view(short_len), 1 << 20, frames), Scan::unsuitable);
  // Refused from the header alone: the body is never awaited.
  auto huge = test::frame_with_length('Q', 1000, ByteBuilder());
  EXPECT_EQ(scan_batch(Bytes(huge.data(), 5), 100, frames), Scan::unsuitable);
  std::vector<uint8_t> many;
  for (size_t i = 0; i <= kMaxBatch; ++i) {
    auto e = execute_msg();
    many.insert(many.end(), e.begin(), e.end());
  }
  auto s = sync_msg();
  many.insert(many.end(), s.begin(), s.end());
  EXPECT_EQ(scan_batch(view(many), 1 << 20, frames), Scan::unsuitable);
}

TEST(RelayMessages, ParsesAndEncodersRoundTrip) {
  auto p = parse_msg("stmt", "SELECT $1, $2", {23, 25});
  std::string_view body(reinterpret_cast<const char*>(p.data()) + 5, p.size() - 5);
  ParseMsg m;
  ASSERT_TRUE(parse_parse(body, m));
  EXPECT_EQ(m.name, "stmt");
  EXPECT_EQ(m.sql, "SELECT $1, $2");
  EXPECT_EQ(m.oids, (std::vector<uint32_t>{23, 25}));
  std::string out;
  put_parse(out, "wpr_1", m.sql, m.oids);
  auto d = decode_frontend({reinterpret_cast<const uint8_t*>(out.data()), out.size()}, 1 << 20);
  ASSERT_EQ(d.status, DecodeStatus::ok);
  const auto& parsed = std::get<Parse>(d.message);
  EXPECT_EQ(parsed.name, "wpr_1");
  EXPECT_EQ(parsed.param_types, (std::vector<uint32_t>{23, 25}));
  EXPECT_EQ(d.consumed, out.size());

  auto b = bind_msg("stmt");
  std::string_view bbody(reinterpret_cast<const char*>(b.data()) + 5, b.size() - 5);
  BindMsg bm;
  ASSERT_TRUE(parse_bind(bbody, bm));
  EXPECT_EQ(bm.statement, "stmt");
  out.clear();
  put_bind(out, bm.portal, "wpr_1", bm.rest);
  d = decode_frontend({reinterpret_cast<const uint8_t*>(out.data()), out.size()}, 1 << 20);
  ASSERT_EQ(d.status, DecodeStatus::ok);
  const auto& bound = std::get<Bind>(d.message);
  EXPECT_EQ(bound.statement, "wpr_1");
  ASSERT_EQ(bound.params.size(), 1u);
  EXPECT_EQ(*bound.params[0], "42");

  out.clear();
  put_target(out, 'D', 'S', "wpr_1");
  d = decode_frontend({reinterpret_cast<const uint8_t*>(out.data()), out.size()}, 1 << 20);
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_EQ(std::get<Describe>(d.message).name, "wpr_1");

  ExecuteMsg em;
  auto e = execute_msg(7);
  ASSERT_TRUE(parse_execute({reinterpret_cast<const char*>(e.data()) + 5, e.size() - 5}, em));
  EXPECT_EQ(em.max_rows, 7);

  ParseMsg bad;
  EXPECT_FALSE(parse_parse(std::string_view("name\0SELECT", 11), bad));      // no terminator
  EXPECT_FALSE(parse_parse(std::string_view("\0SELECT 1\0\0\1", 12), bad));  // count past the end
  TargetMsg t;
  EXPECT_FALSE(parse_target(std::string_view("Xname\0", 6), t));
  EXPECT_FALSE(parse_target(std::string_view("Sname\0extra", 11), t));
}

TEST(RelayErrors, FieldsAndFatalAsError) {
  std::string body = std::string("SFATAL\0VFATAL\0C57P01\0Mterminating connection\0", 45) + '\0';
  EXPECT_EQ(error_field(body, 'C'), "57P01");
  EXPECT_EQ(error_field(body, 'M'), "terminating connection");
  EXPECT_EQ(error_field(body, 'D'), "");
  std::string out;
  put_error_as_error(out, body, "");
  std::string_view ob(out.data() + 5, out.size() - 5);
  EXPECT_EQ(out[0], 'E');
  EXPECT_EQ(error_field(ob, 'S'), "ERROR");
  EXPECT_EQ(error_field(ob, 'V'), "ERROR");
  EXPECT_EQ(error_field(ob, 'C'), "57P01");
  out.clear();
  put_error_as_error(out, body, "canceling statement due to statement timeout");
  EXPECT_EQ(error_field({out.data() + 5, out.size() - 5}, 'M'),
            "canceling statement due to statement timeout");
}

TEST(RelayTracker, PreparedExecutionWithAnAddedParse) {
  Tracker t;
  t.expect(Expect::swallow_parse, 0);
  t.expect(Expect::bind);
  t.expect(Expect::describe_portal);
  t.expect(Expect::execute);
  t.expect(Expect::sync);
  std::string out;
  t.emit_due(out);
  EXPECT_TRUE(out.empty());
  auto s = t.on_message('1');
  EXPECT_FALSE(s.forward);
  EXPECT_FALSE(s.unexpected);
  EXPECT_TRUE(t.on_message('2').forward);
  EXPECT_TRUE(t.on_message('T').forward);
  EXPECT_TRUE(t.on_message('D').forward);
  EXPECT_TRUE(t.on_message('N').forward);  // a notice in the middle
  EXPECT_TRUE(t.on_message('C').forward);
  s = t.on_message('Z');
  EXPECT_TRUE(s.forward);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(t.confirmed(), std::vector<int>{0});
  EXPECT_FALSE(t.failed());
}

TEST(RelayTracker, KnownStatementsAreAnsweredInOrder) {
  Tracker t;
  t.expect(Expect::emit_parse_complete, 0);
  t.expect(Expect::bind);
  t.expect(Expect::execute);
  t.expect(Expect::emit_close_complete);
  t.expect(Expect::sync);
  std::string out;
  t.emit_due(out);
  EXPECT_EQ(out, std::string("1\0\0\0\4", 5));
  out.clear();
  EXPECT_TRUE(t.on_message('2').forward);
  t.emit_due(out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(t.on_message('C').forward);
  t.emit_due(out);
  EXPECT_EQ(out, std::string("3\0\0\0\4", 5));
  EXPECT_TRUE(t.on_message('Z').done);
  EXPECT_EQ(t.confirmed(), std::vector<int>{0});
}

TEST(RelayTracker, AnErrorSkipsToTheSync) {
  Tracker t;
  t.expect(Expect::parse, 0);
  t.expect(Expect::bind);
  t.expect(Expect::emit_parse_complete, 1);
  t.expect(Expect::execute);
  t.expect(Expect::sync);
  auto s = t.on_message('E');  // the Parse failed
  EXPECT_TRUE(s.forward);
  EXPECT_TRUE(t.failed());
  std::string out;
  t.emit_due(out);
  EXPECT_TRUE(out.empty());  // no answer after the error but ReadyForQuery
  EXPECT_TRUE(t.on_message('2').unexpected);
}

TEST(RelayTracker, CountsTheParseCompletesItWroteBeforeAnError) {
  // What a replayed batch must not send the client again.
  Tracker t;
  t.expect(Expect::emit_parse_complete, 0);
  t.expect(Expect::describe_statement);
  t.expect(Expect::emit_parse_complete, 1);
  t.expect(Expect::bind);
  t.expect(Expect::sync);
  std::string out;
  t.emit_due(out);
  EXPECT_EQ(t.emitted_parses(), 1);
  EXPECT_TRUE(t.on_message('E').forward);
  t.emit_due(out);
  EXPECT_EQ(t.emitted_parses(), 1);  // the second Parse was skipped with the rest
  EXPECT_TRUE(t.on_message('Z').done);
  t.clear();
  EXPECT_EQ(t.emitted_parses(), 0);
}

TEST(RelayTracker, ErrorThenReadyForQuery) {
  Tracker t;
  t.expect(Expect::parse, 0);
  t.expect(Expect::sync);
  EXPECT_TRUE(t.on_message('E').forward);
  auto s = t.on_message('Z');
  EXPECT_TRUE(s.done);
  EXPECT_TRUE(t.confirmed().empty());
}

TEST(RelayTracker, QueryWithSeveralResultsAndAnError) {
  Tracker t;
  t.expect(Expect::query);
  for (char c : {'C', 'T', 'D', 'D', 'C', 'S', 'E'}) {
    auto s = t.on_message(c);
    EXPECT_TRUE(s.forward) << c;
    EXPECT_FALSE(s.done) << c;
  }
  EXPECT_TRUE(t.on_message('Z').done);
}

TEST(RelayTracker, CopyAndStrayMessagesAreUnexpected) {
  for (char c : {'G', 'H', 'W', '1', 'K', 'R'}) {
    Tracker t;
    t.expect(Expect::query);
    EXPECT_TRUE(t.on_message(c).unexpected) << c;
  }
  Tracker t;
  t.expect(Expect::bind);
  t.expect(Expect::sync);
  EXPECT_TRUE(t.on_message('1').unexpected);
  Tracker empty;
  EXPECT_TRUE(empty.on_message('Z').unexpected);
}

}  // namespace
}  // namespace wirepool::pg::relay
