// The reach matrix's workload (tests/e2e/test_reach.py) for PgJDBC.
//
// Per backend (database): create; insert with bound int, text, BigDecimal,
// double, date and NULLs; select with the JDBC types checked (getObject gives
// Integer, String, BigDecimal, Double, java.sql.Date) and count(*) a number;
// update and delete with their counts; rollback and commit with
// setAutoCommit(false); a duplicate key answering 23505, the connection usable
// after it; DatabaseMetaData.getColumns. Prints one JSON line per backend.
// Usage: java ReachTest <port> <user> <password> <db1,db2,...>

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

public class ReachTest {
  static String step;

  static void check(boolean cond, String what) {
    if (!cond) throw new IllegalStateException(what);
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') b.append('\\');
      if (ch >= ' ') b.append(ch);
    }
    return b.append('"').toString();
  }

  static void workload(Connection c) throws Exception {
    step = "create";
    try (Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS reach_jdbc");
      s.execute("CREATE TABLE reach_jdbc (id INT PRIMARY KEY, name VARCHAR(40), "
          + "amount DECIMAL(10,2), ratio DOUBLE PRECISION, created DATE)");
    }
    step = "insert";
    String ins = "INSERT INTO reach_jdbc (id, name, amount, ratio, created) VALUES (?, ?, ?, ?, ?)";
    try (PreparedStatement p = c.prepareStatement(ins)) {
      p.setInt(1, 1);
      p.setString(2, "Zoë ✓");
      p.setBigDecimal(3, new BigDecimal("12.50"));
      p.setDouble(4, 2.5);
      p.setDate(5, java.sql.Date.valueOf("2024-01-02"));
      check(p.executeUpdate() == 1, "insert count");
      p.setInt(1, 2);
      p.setNull(2, Types.VARCHAR);
      p.setNull(3, Types.NUMERIC);
      p.setNull(4, Types.DOUBLE);
      p.setNull(5, Types.DATE);
      check(p.executeUpdate() == 1, "insert count");
    }
    step = "select";
    try (PreparedStatement p =
        c.prepareStatement("SELECT id, name, amount, ratio, created FROM reach_jdbc WHERE id = ?")) {
      p.setInt(1, 1);
      try (ResultSet r = p.executeQuery()) {
        check(r.next(), "no row 1");
        Object id = r.getObject(1);
        check(id instanceof Integer && (Integer) id == 1, "id " + id + " (" + cls(id) + ")");
        check("Zoë ✓".equals(r.getObject(2)), "name " + r.getObject(2));
        Object amount = r.getObject(3);
        check(amount instanceof BigDecimal && new BigDecimal("12.50").compareTo((BigDecimal) amount) == 0,
            "amount " + amount + " (" + cls(amount) + ")");
        Object ratio = r.getObject(4);
        check(ratio instanceof Double && (Double) ratio == 2.5, "ratio " + ratio + " (" + cls(ratio) + ")");
        Object created = r.getObject(5);
        check(created instanceof java.sql.Date && created.toString().equals("2024-01-02"),
            "created " + created + " (" + cls(created) + ")");
      }
      p.setInt(1, 2);
      try (ResultSet r = p.executeQuery()) {
        check(r.next(), "no row 2");
        for (int i = 2; i <= 5; i++) check(r.getObject(i) == null, "row 2 column " + i);
      }
    }
    try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM reach_jdbc WHERE id > ?")) {
      p.setInt(1, 0);
      try (ResultSet r = p.executeQuery()) {
        check(r.next(), "no count");
        Object n = r.getObject(1);
        check(n instanceof Number && ((Number) n).intValue() == 2, "count(*) " + n + " (" + cls(n) + ")");
      }
    }
    step = "update";
    try (PreparedStatement p = c.prepareStatement("UPDATE reach_jdbc SET name = ? WHERE id = ?")) {
      p.setString(1, "Ann");
      p.setInt(2, 1);
      int n = p.executeUpdate();
      check(n == 1, "update count " + n);
    }
    step = "delete";
    try (PreparedStatement p = c.prepareStatement("DELETE FROM reach_jdbc WHERE id = ?")) {
      p.setInt(1, 2);
      int n = p.executeUpdate();
      check(n == 1, "delete count " + n);
    }
    step = "rollback";
    c.setAutoCommit(false);
    try (Statement s = c.createStatement()) {
      s.executeUpdate("INSERT INTO reach_jdbc (id, name) VALUES (10, 'gone')");
    }
    c.rollback();
    step = "commit";
    try (Statement s = c.createStatement()) {
      s.executeUpdate("INSERT INTO reach_jdbc (id, name) VALUES (11, 'kept')");
    }
    c.commit();
    c.setAutoCommit(true);
    try (Statement s = c.createStatement();
        ResultSet r = s.executeQuery("SELECT id FROM reach_jdbc ORDER BY id")) {
      List<Integer> ids = new ArrayList<>();
      while (r.next()) ids.add(r.getInt(1));
      check(ids.equals(List.of(1, 11)), "ids " + ids);
    }
    step = "error";
    try (Statement s = c.createStatement()) {
      try {
        s.executeUpdate("INSERT INTO reach_jdbc (id, name) VALUES (1, 'dup')");
        throw new IllegalStateException("no error for a duplicate key");
      } catch (SQLException e) {
        check("23505".equals(e.getSQLState()), "SQLSTATE " + e.getSQLState() + ": " + e.getMessage());
      }
      try (ResultSet r = s.executeQuery("SELECT 1")) {
        check(r.next() && r.getInt(1) == 1, "usable after the error");
      }
    }
    step = "introspect";
    DatabaseMetaData md = c.getMetaData();
    List<String> names = new ArrayList<>();
    try (ResultSet r = md.getColumns(null, null, "reach_jdbc", null)) {
      while (r.next()) names.add(r.getString("COLUMN_NAME"));
    }
    check(names.equals(List.of("id", "name", "amount", "ratio", "created")), "getColumns " + names);
  }

  static String cls(Object o) {
    return o == null ? "null" : o.getClass().getSimpleName();
  }

  public static void main(String[] args) {
    Properties props = new Properties();
    props.setProperty("user", args[1]);
    props.setProperty("password", args[2]);
    props.setProperty("sslmode", "disable");
    props.setProperty("prepareThreshold", "1");
    for (String db : args[3].split(",")) {
      step = "connect";
      String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/" + db;
      try (Connection c = DriverManager.getConnection(url, props)) {
        workload(c);
        System.out.println("{\"backend\": " + quote(db) + ", \"ok\": true}");
      } catch (Throwable e) {
        String msg = String.valueOf(e.getMessage()).split("\n")[0];
        if (msg.length() > 300) msg = msg.substring(0, 300);
        System.out.println("{\"backend\": " + quote(db) + ", \"step\": " + quote(step)
            + ", \"error\": " + quote(e.getClass().getSimpleName() + ": " + msg) + "}");
      }
    }
  }
}
