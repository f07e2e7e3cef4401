"""The cross-protocol reach matrix (issue #32, item 4): every client wirepool
is checked with, against every kind of backend, running one portable workload.

Clients: psql, psycopg2, psycopg 3, SQLAlchemy 1.4 (PostgreSQL dialect on
psycopg2), node-postgres, PgJDBC, tedious 19 (TDS 8.0 front end).
Backends, one wirepool holding them all: sqlite, postgresql (fixture `pg`),
mariadb (driver mysql, fixture `mariadb`), odbc_pg, odbc_maria, odbc_sqlite
(psqlODBC, MariaDB Connector/ODBC, SQLite ODBC), tds (the SQL Server driver
against a second wirepool's TDS listener over SQLite).

The workload of a cell (node/reach.js and java/ReachTest.java do the same):
create a table (INT, VARCHAR, DECIMAL(10,2), DOUBLE PRECISION, DATE); insert
two rows with bound parameters of each kind and NULLs; select them back and
check values and the client's types (int, str, decimal, float, date), and that
count(*) is an integer; update and delete by a parameter with their row
counts; a transaction rolled back and one committed; a duplicate key answering
23505 (2627 for tedious) with the client usable after it; introspection by the
client's own means (information_schema.columns, psql's \\d, SQLAlchemy's
inspector, JDBC's DatabaseMetaData). A cell stops at its first failing step.

EXPECTED lists the cells that cannot pass today with the step and the reason
(docs/reach.md carries the same table): the test fails when a cell fails
unexpectedly, fails at another step, or passes while expected to fail, so a
change in reach is noticed either way. The matrix is printed at the end.
"""

import datetime
import decimal
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import psycopg2
import psycopg2.errors

from harness import NODE_PATH, PSQL, Wirepool, fixture_info

HERE = os.path.dirname(os.path.abspath(__file__))
JDBC_JAR = "/usr/share/java/postgresql.jar"

CLIENTS = ("psql", "psycopg2", "psycopg3", "sqlalchemy", "node-pg", "pgjdbc", "tedious")
BACKENDS = ("sqlite", "postgresql", "mariadb", "odbc_pg", "odbc_maria", "odbc_sqlite", "tds")
COLUMNS = ["id", "name", "amount", "ratio", "created"]

# (client, backend) -> (the step it fails at, why). Keep docs/reach.md in step.
EXPECTED = {
}


class StepFailed(Exception):
    def __init__(self, step, message):
        super().__init__(f"{step}: {message}")
        self.step = step
        self.message = message


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def check_row1(row):
    """Row 1 as inserted: (1, 'Zoë ✓', 12.50, 2.5, 2024-01-02), faithful types."""
    i, name, amount, ratio, created = row
    check(type(i) is int and i == 1, f"id {i!r}")
    check(name == "Zoë ✓", f"name {name!r}")
    check(isinstance(amount, decimal.Decimal) and amount == decimal.Decimal("12.50"),
          f"amount {amount!r}")
    check(isinstance(ratio, float) and ratio == 2.5, f"ratio {ratio!r}")
    check(type(created) is datetime.date and created == datetime.date(2024, 1, 2),
          f"created {created!r}")


def run_dbapi(connect, marker, sqlstate_of):
    """The workload through a DB-API connection (psycopg2, psycopg 3)."""
    step = "connect"
    p = marker
    conn = None
    try:
        conn = connect()
        conn.autocommit = True
        cur = conn.cursor()
        step = "create"
        cur.execute("DROP TABLE IF EXISTS reach_py")
        cur.execute("CREATE TABLE reach_py (id INT PRIMARY KEY, name VARCHAR(40), "
                    "amount DECIMAL(10,2), ratio DOUBLE PRECISION, created DATE)")
        step = "insert"
        ins = f"INSERT INTO reach_py (id, name, amount, ratio, created) VALUES ({p}, {p}, {p}, {p}, {p})"
        cur.execute(ins, (1, "Zoë ✓", decimal.Decimal("12.50"), 2.5, datetime.date(2024, 1, 2)))
        cur.execute(ins, (2, None, None, None, None))
        step = "select"
        cur.execute(f"SELECT id, name, amount, ratio, created FROM reach_py WHERE id = {p}", (1,))
        check_row1(cur.fetchone())
        cur.execute(f"SELECT id, name, amount, ratio, created FROM reach_py WHERE id = {p}", (2,))
        check(cur.fetchone() == (2, None, None, None, None), "row 2")
        cur.execute(f"SELECT count(*) FROM reach_py WHERE id > {p}", (0,))
        n = cur.fetchone()[0]
        check(type(n) is int and n == 2, f"count(*) {n!r}")
        step = "update"
        cur.execute(f"UPDATE reach_py SET name = {p} WHERE id = {p}", ("Ann", 1))
        check(cur.rowcount == 1, f"rowcount {cur.rowcount}")
        step = "delete"
        cur.execute(f"DELETE FROM reach_py WHERE id = {p}", (2,))
        check(cur.rowcount == 1, f"rowcount {cur.rowcount}")
        step = "rollback"
        conn.autocommit = False
        cur.execute(f"INSERT INTO reach_py (id, name) VALUES ({p}, {p})", (10, "gone"))
        conn.rollback()
        step = "commit"
        cur.execute(f"INSERT INTO reach_py (id, name) VALUES ({p}, {p})", (11, "kept"))
        conn.commit()
        conn.autocommit = True
        cur.execute("SELECT id FROM reach_py ORDER BY id")
        ids = [r[0] for r in cur.fetchall()]
        check(ids == [1, 11], f"ids {ids}")
        step = "error"
        try:
            cur.execute(f"INSERT INTO reach_py (id, name) VALUES ({p}, {p})", (1, "dup"))
            raise AssertionError("no error for a duplicate key")
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001 - the client's own error class
            check(sqlstate_of(e) == "23505", f"SQLSTATE {sqlstate_of(e)}: {e}")
        cur.execute("SELECT 1")
        check(cur.fetchone()[0] == 1, "usable after the error")
        step = "introspect"
        cur.execute("SELECT column_name FROM information_schema.columns "
                    f"WHERE table_name = {p} ORDER BY ordinal_position", ("reach_py",))
        names = [r[0] for r in cur.fetchall()]
        check(names == COLUMNS, f"columns {names}")
    except Exception as e:  # noqa: BLE001
        raise StepFailed(step, f"{type(e).__name__}: {e}".strip()) from None
    finally:
        if conn is not None:
            conn.close()


def run_sqlalchemy(url):
    import sqlalchemy as sa
    step = "connect"
    try:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        with engine.connect() as c:
            c.execute(sa.text("SELECT 1"))
        step = "create"
        with engine.begin() as c:
            c.execute(sa.text("DROP TABLE IF EXISTS reach_sa"))
        with engine.begin() as c:
            c.execute(sa.text("CREATE TABLE reach_sa (id INT PRIMARY KEY, name VARCHAR(40), "
                              "amount DECIMAL(10,2), ratio DOUBLE PRECISION, created DATE)"))
        step = "insert"
        ins = sa.text("INSERT INTO reach_sa (id, name, amount, ratio, created) "
                      "VALUES (:id, :name, :amount, :ratio, :created)")
        with engine.begin() as c:
            c.execute(ins, [dict(id=1, name="Zoë ✓", amount=decimal.Decimal("12.50"), ratio=2.5,
                                 created=datetime.date(2024, 1, 2)),
                            dict(id=2, name=None, amount=None, ratio=None, created=None)])
        step = "select"
        sel = sa.text("SELECT id, name, amount, ratio, created FROM reach_sa WHERE id = :id")
        with engine.connect() as c:
            check_row1(tuple(c.execute(sel, dict(id=1)).one()))
            check(tuple(c.execute(sel, dict(id=2)).one()) == (2, None, None, None, None), "row 2")
            n = c.execute(sa.text("SELECT count(*) FROM reach_sa")).scalar()
            check(type(n) is int and n == 2, f"count(*) {n!r}")
        step = "update"
        with engine.begin() as c:
            r = c.execute(sa.text("UPDATE reach_sa SET name = :n WHERE id = :id"),
                          dict(n="Ann", id=1))
            check(r.rowcount == 1, f"rowcount {r.rowcount}")
        step = "delete"
        with engine.begin() as c:
            r = c.execute(sa.text("DELETE FROM reach_sa WHERE id = :id"), dict(id=2))
            check(r.rowcount == 1, f"rowcount {r.rowcount}")
        step = "rollback"
        with engine.connect() as c:
            t = c.begin()
            c.execute(sa.text("INSERT INTO reach_sa (id, name) VALUES (10, 'gone')"))
            t.rollback()
        step = "commit"
        with engine.begin() as c:
            c.execute(sa.text("INSERT INTO reach_sa (id, name) VALUES (11, 'kept')"))
        with engine.connect() as c:
            ids = [r[0] for r in c.execute(sa.text("SELECT id FROM reach_sa ORDER BY id"))]
            check(ids == [1, 11], f"ids {ids}")
        step = "error"
        try:
            with engine.begin() as c:
                c.execute(sa.text("INSERT INTO reach_sa (id, name) VALUES (1, 'dup')"))
            raise AssertionError("no error for a duplicate key")
        except sa.exc.DBAPIError as e:
            check(getattr(e.orig, "pgcode", None) == "23505", f"SQLSTATE {e.orig.pgcode}: {e}")
        step = "introspect"
        insp = sa.inspect(engine)
        check("reach_sa" in insp.get_table_names(), "get_table_names")
        names = [c["name"] for c in insp.get_columns("reach_sa")]
        check(names == COLUMNS, f"get_columns {names}")
        check(insp.get_pk_constraint("reach_sa")["constrained_columns"] == ["id"], "pk")
        engine.dispose()
    except StepFailed:
        raise
    except Exception as e:  # noqa: BLE001
        raise StepFailed(step, f"{type(e).__name__}: {e}".split("\n[SQL")[0].strip()) from None


def run_psql(dsn):
    def q(step, sql, expect=None, error=None):
        r = subprocess.run([PSQL, "-X", "-A", "-t", "-v", "VERBOSITY=verbose", dsn, "-c", sql],
                           capture_output=True, text=True, timeout=60)
        if error:
            if r.returncode == 0 or error not in r.stderr:
                raise StepFailed(step, f"expected {error}, got: {r.stderr.strip()[:300]}")
            return r.stdout
        if r.returncode != 0:
            raise StepFailed(step, r.stderr.strip()[:300])
        if expect is not None and r.stdout.strip() != expect:
            raise StepFailed(step, f"got {r.stdout.strip()!r}, expected {expect!r}")
        return r.stdout

    q("create", "DROP TABLE IF EXISTS reach_psql")
    q("create", "CREATE TABLE reach_psql (id INT PRIMARY KEY, name VARCHAR(40), "
      "amount DECIMAL(10,2), ratio DOUBLE PRECISION, created DATE)")
    q("insert", "INSERT INTO reach_psql VALUES (1, 'Zoë ✓', 12.50, 2.5, '2024-01-02')")
    q("insert", "INSERT INTO reach_psql VALUES (2, NULL, NULL, NULL, NULL)")
    q("select", "SELECT id, name, amount, ratio, created FROM reach_psql WHERE id = 1",
      "1|Zoë ✓|12.50|2.5|2024-01-02")
    q("select", "SELECT count(*) FROM reach_psql", "2")
    q("update", "UPDATE reach_psql SET name = 'Ann' WHERE id = 1", "UPDATE 1")
    q("delete", "DELETE FROM reach_psql WHERE id = 2", "DELETE 1")
    q("rollback", "BEGIN; INSERT INTO reach_psql (id, name) VALUES (10, 'gone'); ROLLBACK")
    q("commit", "BEGIN; INSERT INTO reach_psql (id, name) VALUES (11, 'kept'); COMMIT")
    q("commit", "SELECT id FROM reach_psql ORDER BY id", "1\n11")
    q("error", "INSERT INTO reach_psql (id, name) VALUES (1, 'dup')", error="23505")
    out = q("introspect", "\\d reach_psql")
    for col in COLUMNS:
        if col not in out:
            raise StepFailed("introspect", f"\\d lacks {col}: {out[:300]!r}")


class ReachMatrixTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        pg = fixture_info("WIREPOOL_PG_INFO", "PostgreSQL")
        maria = fixture_info("WIREPOOL_MARIADB_INFO", "MariaDB")
        os.environ["WIREPOOL_TEST_REACH_PG_PASSWORD"] = pg["password"]
        os.environ["WIREPOOL_TEST_REACH_MARIA_PASSWORD"] = maria["password"]
        os.environ["WIREPOOL_TEST_TDS_PASSWORD"] = "wonderland"
        cls.work = tempfile.mkdtemp(prefix="wp-reach-")
        cls.tds_backend = Wirepool(name="reach-tds", tls="{ generate: true }", tds=True).start()
        cert = cls.tds_backend.certificate()
        pool = "pool: { mode: transaction, max: 3 }"
        databases = f"""
          - name: sqlite
            driver: sqlite
            connection: {cls.work}/reach.db
            options: {{ busy_timeout: 5s }}
            {pool}
          - name: postgresql
            driver: postgresql
            connection: "host={pg['host']} port={pg['port']} user={pg['user']} dbname={pg['database']}"
            password_env: WIREPOOL_TEST_REACH_PG_PASSWORD
            {pool}
          - name: mariadb
            driver: mysql
            connection: "host={maria['host']} port={maria['port']} user={maria['user']} dbname={maria['database']}"
            password_env: WIREPOOL_TEST_REACH_MARIA_PASSWORD
            {pool}
          - name: odbc_pg
            driver: odbc
            connection: "Driver={{PostgreSQL Unicode}};Server={pg['host']};Port={pg['port']};Database={pg['database']};Uid={pg['user']};BoolsAsChar=0"
            password_env: WIREPOOL_TEST_REACH_PG_PASSWORD
            {pool}
          - name: odbc_maria
            driver: odbc
            connection: "Driver={{MariaDB Unicode}};Server={maria['host']};Port={maria['port']};Database={maria['database']};Uid={maria['user']}"
            password_env: WIREPOOL_TEST_REACH_MARIA_PASSWORD
            {pool}
          - name: odbc_sqlite
            driver: odbc
            connection: "Driver={{SQLite3}};Database={cls.work}/reach_odbc.db"
            {pool}
          - name: tds
            driver: tds
            connection: "host=127.0.0.1;port={cls.tds_backend.tds_port};user=alice;database=app"
            password_env: WIREPOOL_TEST_TDS_PASSWORD
            {pool}
            tls: {{ ca: {cert} }}
        """
        try:
            cls.wp = Wirepool(databases=databases, name="reach", tls="{ generate: true }",
                              tds=True, users="- { name: alice, password: wonderland }").start()
        except Exception:
            cls.tds_backend.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.wp.cleanup()
        finally:
            cls.tds_backend.cleanup()
            shutil.rmtree(cls.work, ignore_errors=True)

    def python_cells(self, results):
        import psycopg
        for db in BACKENDS:
            kv = self.wp.kv(database=db)
            for client, fn in (
                    ("psql", lambda: run_psql(self.wp.dsn(database=db))),
                    ("psycopg2", lambda: run_dbapi(lambda: psycopg2.connect(kv), "%s",
                                                   lambda e: getattr(e, "pgcode", None))),
                    ("psycopg3", lambda: run_dbapi(lambda: psycopg.connect(kv), "%s",
                                                   lambda e: getattr(e, "sqlstate", None))),
                    ("sqlalchemy", lambda: run_sqlalchemy(
                        f"postgresql+psycopg2://alice:wonderland@127.0.0.1:{self.wp.port}/{db}"))):
                try:
                    fn()
                    results[(client, db)] = None
                except StepFailed as e:
                    results[(client, db)] = (e.step, e.message)

    def external_cells(self, results, client, argv, timeout=180):
        """A program that runs the workload on every backend and prints one JSON
        line per cell: {"backend", "ok"} or {"backend", "step", "error"}."""
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, NODE_PATH=NODE_PATH))
        seen = set()
        for line in r.stdout.splitlines():
            if not line.startswith("{"):
                continue
            cell = json.loads(line)
            seen.add(cell["backend"])
            results[(client, cell["backend"])] = (
                None if cell.get("ok") else (cell["step"], cell["error"]))
        for db in BACKENDS:
            if db not in seen:
                results[(client, db)] = ("run", f"exit {r.returncode}: {r.stderr.strip()[-300:]}")

    def test_matrix(self):
        started = time.monotonic()
        results = {}
        self.python_cells(results)
        if not os.path.isdir(os.path.join(NODE_PATH, "pg")):
            self.fail(f"node-postgres is not installed in {NODE_PATH} (make test installs it)")
        script = os.path.join(HERE, "node", "reach.js")
        base = dict(backends=BACKENDS, user="alice", password="wonderland")
        self.external_cells(results, "node-pg", [
            "node", script, json.dumps(dict(base, client="pg", port=self.wp.port))])
        self.external_cells(results, "tedious", [
            "node", script, json.dumps(dict(base, client="tedious19", port=self.wp.tds_port,
                                            ca=self.wp.certificate()))])
        work = tempfile.mkdtemp(prefix="reach-jdbc-")
        try:
            subprocess.run(["javac", "-d", work, "-cp", JDBC_JAR,
                            os.path.join(HERE, "java", "ReachTest.java")],
                           check=True, capture_output=True, timeout=300)
            self.external_cells(results, "pgjdbc", [
                "java", "-cp", f"{work}:{JDBC_JAR}", "ReachTest", str(self.wp.port),
                "alice", "wonderland", ",".join(BACKENDS)])
        finally:
            shutil.rmtree(work, ignore_errors=True)
        elapsed = time.monotonic() - started

        surprises = []
        width = max(len(c) for c in CLIENTS)
        lines = ["", "reach matrix (ok / x = expected failure / FAIL = unexpected / PASS = "
                 "passes while expected to fail):", " " * width + "  " +
                 " ".join(f"{b:>11}" for b in BACKENDS)]
        for client in CLIENTS:
            marks = []
            for db in BACKENDS:
                got = results.get((client, db), ("run", "no result"))
                want = EXPECTED.get((client, db))
                if got is None and want is None:
                    marks.append("ok")
                elif got is None:
                    marks.append("PASS")
                    surprises.append(f"{client} × {db}: passes; expected to fail at {want[0]} "
                                     f"({want[1]}): remove it from EXPECTED and docs/reach.md")
                elif want is not None and got[0] == want[0]:
                    marks.append("x")
                else:
                    marks.append("FAIL")
                    surprises.append(f"{client} × {db}: fails at {got[0]}: {got[1]}" +
                                     (f" (expected at {want[0]})" if want else ""))
            lines.append(f"{client:<{width}}  " + " ".join(f"{m:>11}" for m in marks))
        green = sum(1 for v in results.values() if v is None)
        lines.append(f"{green}/{len(CLIENTS) * len(BACKENDS)} cells green, "
                     f"{len(EXPECTED)} expected failures; {elapsed:.0f} s")
        for (client, db), (step, why) in sorted(EXPECTED.items()):
            lines.append(f"  x {client} × {db} at {step}: {why}")
        print("\n".join(lines))
        self.assertEqual(surprises, [], "\n".join(surprises) + "\n--- log:\n" +
                         self.wp.log()[-3000:])


if __name__ == "__main__":
    unittest.main()
