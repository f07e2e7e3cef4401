// PgJDBC checks for test_pgjdbc.py: one check per run, against one target.
// Prints what the client saw, one observation per line; an SQLException is an
// observation ("error <SQLSTATE> <message>"), anything else fails the run.
// Usage: java PgJdbcChecks <check> <host> <port> <database> <user> <password> <table>

import java.math.BigDecimal;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Properties;

public class PgJdbcChecks {
  static String url;
  static Properties base = new Properties();
  static String table;

  static void out(Object o) {
    System.out.println(String.valueOf(o).replace(table, "T"));
  }

  static void error(SQLException e) {
    out("error " + e.getSQLState() + " " + e.getMessage().split("\n")[0]);
  }

  static Connection connect(String... extra) throws SQLException {
    Properties p = new Properties();
    p.putAll(base);
    for (int i = 0; i + 1 < extra.length; i += 2) p.setProperty(extra[i], extra[i + 1]);
    return DriverManager.getConnection(url, p);
  }

  static void rows(ResultSet rs) throws SQLException {
    ResultSetMetaData md = rs.getMetaData();
    StringBuilder head = new StringBuilder("columns");
    for (int i = 1; i <= md.getColumnCount(); ++i) {
      head.append(' ').append(md.getColumnLabel(i)).append(':').append(md.getColumnTypeName(i));
    }
    out(head);
    while (rs.next()) {
      StringBuilder row = new StringBuilder("row");
      for (int i = 1; i <= md.getColumnCount(); ++i) {
        Object v = rs.getObject(i);
        row.append(' ').append(v instanceof byte[] ? Arrays.toString((byte[]) v) : v);
      }
      out(row);
    }
  }

  /// The same PreparedStatement past prepareThreshold=1: a named server-side
  /// statement from the first execution, with several parameter types.
  static void prepared() throws SQLException {
    try (Connection c = connect("prepareThreshold", "1")) {
      try (PreparedStatement ps =
          c.prepareStatement("SELECT ?::int + 1 AS n, ?::text || 'x' AS t, ?::numeric * 2 AS d")) {
        for (int i = 0; i < 8; ++i) {
          ps.setInt(1, i);
          ps.setString(2, "s" + i);
          ps.setBigDecimal(3, new BigDecimal("1." + i));
          try (ResultSet rs = ps.executeQuery()) {
            rows(rs);
          }
        }
      }
      // A second statement whose text collides with nothing, then a runtime error.
      try (PreparedStatement ps = c.prepareStatement("SELECT 10 / ?::int AS q")) {
        for (int i = 2; i >= 0; --i) {
          ps.setInt(1, i);
          try (ResultSet rs = ps.executeQuery()) {
            rows(rs);
          } catch (SQLException e) {
            error(e);
          }
        }
      }
    }
  }

  /// Batch inserts: plain, rewritten into multi-row INSERTs, and with a
  /// duplicate key in the middle (autocommit on and off).
  static void batches() throws SQLException {
    for (String rewrite : new String[] {"false", "true"}) {
      try (Connection c = connect("prepareThreshold", "1", "reWriteBatchedInserts", rewrite)) {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?)")) {
          int base = rewrite.equals("true") ? 1000 : 0;
          for (int i = 0; i < 300; ++i) {
            ps.setInt(1, base + i);
            ps.setString(2, "v" + i);
            ps.addBatch();
          }
          int[] counts = ps.executeBatch();
          out("batch rewrite=" + rewrite + " statements=" + counts.length + " sum=" + sum(counts));
        }
        for (boolean auto : new boolean[] {true, false}) {
          c.setAutoCommit(auto);
          try (PreparedStatement ps =
              c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?)")) {
            int base = (rewrite.equals("true") ? 5000 : 3000) + (auto ? 0 : 500);
            for (int i = 0; i < 20; ++i) {
              ps.setInt(1, i == 10 ? 0 : base + i);  // id 0 exists: 23505 in the middle
              ps.setString(2, "dup");
              ps.addBatch();
            }
            ps.executeBatch();
            out("duplicate batch went through");
          } catch (BatchUpdateException e) {
            error(e);
          }
          if (!auto) c.rollback();
          try (Statement s = c.createStatement();
              ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
            rs.next();
            out("rows now " + rs.getLong(1));
          }
          if (!auto) c.commit();
        }
      }
    }
  }

  /// Transactions with savepoints, an error inside, and a rollback to it.
  static void transactions() throws SQLException {
    try (Connection c = connect("prepareThreshold", "1")) {
      c.setAutoCommit(false);
      try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " VALUES (?, ?)")) {
        ps.setInt(1, 1);
        ps.setString(2, "a");
        ps.executeUpdate();
        Savepoint sp = c.setSavepoint();
        ps.setInt(1, 1);
        ps.setString(2, "again");
        try {
          ps.executeUpdate();
        } catch (SQLException e) {
          error(e);
        }
        c.rollback(sp);
        ps.setInt(1, 2);
        ps.setString(2, "b");
        out("updated " + ps.executeUpdate());
        c.commit();
        ps.setInt(1, 3);
        ps.setString(2, "c");
        ps.executeUpdate();
        c.rollback();
      }
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT id, v FROM " + table + " ORDER BY id")) {
        rows(rs);
      }
      c.commit();
    }
  }

  /// Cursor-based fetching (autocommit off, setFetchSize): Execute with a row
  /// limit on a portal kept open across round trips; then generated keys.
  static void fetchSize() throws SQLException {
    try (Connection c = connect("prepareThreshold", "1")) {
      c.setAutoCommit(false);
      try (PreparedStatement ps =
          c.prepareStatement("SELECT g, md5(g::text) FROM generate_series(1, ?) g")) {
        ps.setFetchSize(7);
        ps.setInt(1, 50);
        long n = 0, sum = 0;
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ++n;
            sum += rs.getLong(1);
          }
        }
        out("fetched " + n + " sum " + sum);
      }
      try (PreparedStatement ps = c.prepareStatement(
          "INSERT INTO " + table + " VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
        ps.setInt(1, 42);
        ps.setString(2, "key");
        ps.executeUpdate();
        try (ResultSet keys = ps.getGeneratedKeys()) {
          rows(keys);
        }
      }
      c.commit();
    }
  }

  /// Result types as PgJDBC maps them, read with getObject.
  static void types() throws SQLException {
    try (Connection c = connect("prepareThreshold", "1");
        PreparedStatement ps = c.prepareStatement(
            "SELECT 1::int2 AS a, 2::int4 AS b, 3::int8 AS c, 1.5::numeric(5,2) AS d, "
            + "2.25::float8 AS e, true AS f, 'x'::text AS g, '\\x0102'::bytea AS h, "
            + "'2024-02-29'::date AS i, '2024-02-29 12:34:56.789'::timestamp AS j, "
            + "'11111111-2222-3333-4444-555555555555'::uuid AS k, '{\"a\":1}'::jsonb AS l, "
            + "ARRAY[1,2,3] AS m, NULL::int AS n, ?::int AS o")) {
      for (int i = 0; i < 3; ++i) {
        ps.setInt(1, i);
        try (ResultSet rs = ps.executeQuery()) {
          rows(rs);
        }
      }
    }
  }

  /// DatabaseMetaData: the table and its columns and primary key.
  static void metadata() throws SQLException {
    try (Connection c = connect()) {
      DatabaseMetaData md = c.getMetaData();
      try (ResultSet rs = md.getTables(null, "public", table, new String[] {"TABLE"})) {
        while (rs.next()) out("table " + rs.getString("TABLE_NAME"));
      }
      try (ResultSet rs = md.getColumns(null, "public", table, null)) {
        while (rs.next()) {
          out("column " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME") + " "
              + rs.getString("IS_NULLABLE"));
        }
      }
      try (ResultSet rs = md.getPrimaryKeys(null, "public", table)) {
        while (rs.next()) out("pk " + rs.getString("COLUMN_NAME"));
      }
    }
  }

  static long sum(int[] counts) {
    long s = 0;
    for (int n : counts) s += n;
    return s;
  }

  public static void main(String[] args) throws Exception {
    String check = args[0];
    url = "jdbc:postgresql://" + args[1] + ":" + args[2] + "/" + args[3];
    base.setProperty("user", args[4]);
    base.setProperty("password", args[5]);
    base.setProperty("sslmode", "disable");
    base.setProperty("connectTimeout", "10");
    base.setProperty("socketTimeout", "30");
    table = args[6];
    switch (check) {
      case "prepared" -> prepared();
      case "batches" -> batches();
      case "transactions" -> transactions();
      case "fetch_size" -> fetchSize();
      case "types" -> types();
      case "metadata" -> metadata();
      default -> throw new IllegalArgumentException("no check " + check);
    }
  }
}
