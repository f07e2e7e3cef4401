"""PostgreSQL clients through the SQL Server driver, end to end.

Two wirepools: `backend` serves TDS 8.0 (its own front end) over SQLite with a
generated certificate; `front` has one database `app` with `driver: tds`
pointing at it, the certificate as `tls.ca` and its public key pinned. psql and
psycopg2 (Debian's python3-psycopg2) talk to `front`.

Covers: round trips of int, float, text with non-ASCII characters, NULL and
bytea-as-blob; psycopg2's own transactions (BEGIN through TM requests, commit
and rollback); unique violation 23505 and syntax error 42601 reach the
PostgreSQL client with SQL Server's number in the detail; a statement longer
than one TDS packet; more psycopg2 clients than the front pool's backend
connections; a wrong pin makes the front refuse queries with a clear error;
node-postgres named statements (Parse, Describe, Bind, Execute) get the real
columns (the driver's sp_prepare asks for them, and wirepool's TDS front end
answers with a COLMETADATA as SQL Server does), and a named statement with bad
SQL fails at its Parse; psql's \\d through the catalog mirror (types, primary
key, unique constraint) and PostgreSQL forms rewritten for T-SQL.
"""

import datetime
import hashlib
import subprocess
import threading
import unittest

import psycopg2
import psycopg2.errors

from harness import NODE_PATH, Wirepool, psql


def public_key_pin(cert_path):
    pub = subprocess.run(["openssl", "x509", "-in", cert_path, "-pubkey", "-noout"],
                         capture_output=True, check=True).stdout
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pub,
                         capture_output=True, check=True).stdout
    return hashlib.sha256(der).hexdigest()


def front_databases(port, cert, pin, max_conns=3):
    return f"""
      - name: app
        driver: tds
        connection: "host=127.0.0.1;port={port};user=alice;database=app"
        password_env: WIREPOOL_TEST_TDS_PASSWORD
        pool: {{ mode: transaction, max: {max_conns}, acquire_timeout: 20s }}
        tls: {{ ca: {cert}, pin_sha256: [{pin}] }}
    """


class TdsDriverEndToEnd(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        import os
        cls.backend = Wirepool(name="tds-backend", tls="{ generate: true }", tds=True).start()
        cert = cls.backend.certificate()
        os.environ["WIREPOOL_TEST_TDS_PASSWORD"] = "wonderland"
        cls.front = Wirepool(databases=front_databases(cls.backend.tds_port, cert,
                                                       public_key_pin(cert)),
                             name="tds-front").start()

    @classmethod
    def tearDownClass(cls):
        cls.front.cleanup()
        cls.backend.cleanup()

    def connect(self):
        return psycopg2.connect(self.front.kv())

    def test_round_trip_and_transactions(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS e1")
        cur.execute("CREATE TABLE e1 (i INTEGER, f REAL, t TEXT, n TEXT)")
        cur.execute("INSERT INTO e1 VALUES (%s, %s, %s, %s)", (9007199254740993, 3.25,
                                                              "grüße, 世界", None))
        conn.commit()
        cur.execute("INSERT INTO e1 VALUES (2, 0, 'rolled back', NULL)")
        conn.rollback()
        cur.execute("SELECT i, f, t, n FROM e1 ORDER BY i")
        self.assertEqual(cur.fetchall(), [(9007199254740993, 3.25, "grüße, 世界", None)])
        # The T-SQL rewrite sends that parameter as N'grüße, 世界'; wirepool's TDS
        # front end hands SQLite (which has no N'') the literal without its N.
        cur.execute("SELECT N'Zoë', n'x', 'N''y' -- N'z'")
        self.assertEqual(cur.fetchone(), ("Zoë", "x", "N'y"))
        conn.commit()
        conn.close()

    def test_errors_carry_sqlstate(self):
        conn = self.connect()
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS e2")
        cur.execute("CREATE TABLE e2 (id INTEGER PRIMARY KEY)")
        cur.execute("INSERT INTO e2 VALUES (1)")
        with self.assertRaises(psycopg2.errors.UniqueViolation) as ctx:
            cur.execute("INSERT INTO e2 VALUES (1)")
        self.assertEqual(ctx.exception.pgcode, "23505")
        with self.assertRaises(psycopg2.Error) as ctx:
            cur.execute("SELEC 1")
        self.assertEqual(ctx.exception.pgcode, "42601")
        cur.execute("SELECT count(*) FROM e2")
        self.assertEqual(cur.fetchone()[0], 1)
        conn.close()

    def test_long_statement_and_psql(self):
        conn = self.connect()
        conn.autocommit = True
        cur = conn.cursor()
        big = "x" * 50000
        cur.execute("SELECT %s AS s", (big,))
        self.assertEqual(cur.fetchone()[0], big)
        conn.close()
        out = psql(self.front.dsn(), "-c", "SELECT 40 + 2")
        self.assertEqual(out.stdout.strip(), "42")

    def test_catalog_mirror_and_rewrites(self):
        # psql's \d reads pg_catalog: answered from the mirror of INFORMATION_SCHEMA, with
        # the types the driver sends and the primary key and unique constraint (the
        # stand-in's SQLite names the latter sqlite_autoindex_..., which SQLite refuses to
        # create: mirrored as <table>_<cols>_key).
        conn = self.connect()
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS cat1")
        cur.execute("CREATE TABLE cat1 (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE, "
                    "amount DECIMAL(10,2), created DATE)")
        out = psql(self.front.dsn(), "-P", "tuples_only=off", "-c", "\\d cat1").stdout
        for line in ("id|integer||not null|", "name|character varying(40)||not null|",
                     "amount|numeric(10,2)|||", "created|date|||",
                     '"cat1_pkey" PRIMARY KEY, btree (id)', '"cat1_name_key" UNIQUE, btree (name)'):
            self.assertIn(line, out)
        # PostgreSQL forms rewritten for T-SQL: a date literal's cast, integer casts,
        # booleans, current_schema (the catalog's schema) and version().
        cur.execute("INSERT INTO cat1 VALUES (%s, %s, %s, %s)",
                    (1, "x", 1, datetime.date(2024, 1, 2)))
        cur.execute("SELECT created, '7'::int4 + 1, current_schema(), version() FROM cat1 "
                    "WHERE id = 1::int8")
        created, n, schema, version = cur.fetchone()
        self.assertEqual((str(created), n, schema), ("2024-01-02", 8, "public"))
        self.assertTrue(version.startswith("PostgreSQL 15.0"), version)
        conn.close()

    def test_node_postgres_named_statements_are_described(self):
        script = r"""
const { Client } = require('pg');
(async () => {
  const c = new Client({ connectionString: process.argv[1] });
  await c.connect();
  const out = [];
  for (const v of ['one', 'two']) {
    const r = await c.query({ name: 'pair', text: 'SELECT $1 AS word, 2 AS two', values: [v] });
    out.push(r.fields.map(f => f.name).join(',') + '=' + JSON.stringify(r.rows));
  }
  try { await c.query({ name: 'bad', text: 'SELEC 1' }); out.push('no error'); }
  catch (e) { out.push('bad:' + e.code); }
  await c.end();
  console.log(out.join('\n'));
})().catch(e => { console.error(e); process.exit(1); });
"""
        r = subprocess.run(["node", "-e", script, self.front.dsn(database="app")],
                           capture_output=True, text=True, timeout=60,
                           env={"NODE_PATH": NODE_PATH, "PATH": "/usr/bin:/bin"})
        self.assertEqual(r.returncode, 0, r.stderr + self.front.log()[-1500:])
        self.assertEqual(r.stdout.split("\n")[:3],
                         ['word,two=[{"word":"one","two":"2"}]',
                          'word,two=[{"word":"two","two":"2"}]',
                          "bad:42601"])

    def test_more_clients_than_backend_connections(self):
        results = []

        def client(i):
            c = self.connect()
            c.autocommit = True
            cur = c.cursor()
            total = 0
            for k in range(10):
                cur.execute("SELECT %s * 2", (i * 100 + k,))
                total += cur.fetchone()[0]
            c.close()
            results.append(total)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(results), sorted(2 * (i * 1000 + 45) for i in range(8)))


class TdsDriverWrongPin(unittest.TestCase):

    def test_pin_mismatch_is_refused(self):
        import os
        backend = Wirepool(name="tds-backend-pin", tls="{ generate: true }", tds=True).start()
        os.environ["WIREPOOL_TEST_TDS_PASSWORD"] = "wonderland"
        front = Wirepool(databases=front_databases(backend.tds_port, backend.certificate(),
                                                   "ab" * 32),
                         name="tds-front-pin").start()
        try:
            conn = psycopg2.connect(front.kv())
            conn.autocommit = True
            with self.assertRaises(psycopg2.Error) as ctx:
                conn.cursor().execute("SELECT 1")
            self.assertIn("pin_sha256", str(ctx.exception))
            conn.close()
        except psycopg2.OperationalError as e:  # refused at connect: also a refusal
            self.assertIn("pin_sha256", str(e))
        finally:
            front.cleanup()
            backend.cleanup()


if __name__ == "__main__":
    unittest.main()
