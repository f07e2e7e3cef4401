// PgJDBC through wirepool: many threads running server-side prepared statements.
//
// Covers: connecting unconfigured (PgJDBC sends extra_float_digits and
// application_name as startup parameters); each thread runs the same
// PreparedStatement well past prepareThreshold (so the driver switches to a
// named server-side statement), over a pool smaller than the thread count in
// transaction mode, and checks every row it reads; batches and transactions
// with setAutoCommit(false).
// Usage: java JdbcTest <url> <user> <password> <threads>

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;

public class JdbcTest {
  public static void main(String[] args) throws Exception {
    String url = args[0];
    Properties props = new Properties();
    props.setProperty("user", args[1]);
    props.setProperty("password", args[2]);
    props.setProperty("prepareThreshold", "3");
    props.setProperty("sslmode", "disable");
    int threads = Integer.parseInt(args[3]);

    try (Connection c = DriverManager.getConnection(url, props); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE jt (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score DOUBLE PRECISION)");
      c.setAutoCommit(false);
      try (PreparedStatement ins = c.prepareStatement("INSERT INTO jt VALUES (?, ?, ?)")) {
        for (int i = 0; i < 200; i++) {
          ins.setInt(1, i);
          ins.setString(2, "name-" + i);
          ins.setDouble(3, i * 0.5);
          ins.addBatch();
        }
        ins.executeBatch();
      }
      c.commit();
    }

    AtomicInteger failures = new AtomicInteger();
    AtomicInteger checked = new AtomicInteger();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int seed = t;
      Thread w = new Thread(() -> {
        try (Connection c = DriverManager.getConnection(url, props);
             PreparedStatement q = c.prepareStatement("SELECT id, name, score FROM jt WHERE id = ?")) {
          for (int i = 0; i < 100; i++) {
            int id = (seed * 31 + i * 7) % 200;
            q.setInt(1, id);
            try (ResultSet rs = q.executeQuery()) {
              if (!rs.next()) throw new AssertionError("no row for " + id);
              if (rs.getInt(1) != id || !rs.getString(2).equals("name-" + id)
                  || rs.getDouble(3) != id * 0.5) {
                throw new AssertionError("wrong row for " + id + ": " + rs.getInt(1) + " "
                    + rs.getString(2) + " " + rs.getDouble(3));
              }
              if (rs.next()) throw new AssertionError("two rows for " + id);
            }
            checked.incrementAndGet();
          }
        } catch (Throwable e) {
          failures.incrementAndGet();
          e.printStackTrace();
        }
      });
      workers.add(w);
      w.start();
    }
    for (Thread w : workers) w.join();
    if (failures.get() != 0) {
      System.out.println("jdbc: " + failures.get() + " thread(s) failed");
      System.exit(1);
    }
    if (checked.get() != threads * 100) {
      System.out.println("jdbc: checked " + checked.get());
      System.exit(1);
    }
    System.out.println("jdbc: ok (" + checked.get() + " rows checked)");
  }
}
