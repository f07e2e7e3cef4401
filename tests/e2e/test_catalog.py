"""PostgreSQL tools on a SQLite backend: the catalog and the rewrites (issue #32).

Covers: psql's \\dt, \\d TABLE (columns, types, NOT NULL, defaults, primary key,
unique and plain indexes, foreign keys), \\di, \\dv, \\dn, \\l and \\df through
wirepool on SQLite; the catalog following CREATE TABLE in the same session, also for a
prepared statement (psycopg 3);
SQLAlchemy's inspector (PostgreSQL dialect, psycopg2): table names, columns,
primary key, foreign keys; casts (SELECT 1::int4, '2'::int + 1, psycopg2's
'...'::bytea), current_user, now(), ILIKE; text in strings and quoted
identifiers left alone; a catalog relation or function not covered answers
0A000 naming it.

Faithful types on SQLite (FaithfulTypesTest): integer columns are described by
their declared name (SMALLINT/TINYINT int2, INT/MEDIUMINT int4, INTEGER and
BIGINT int8) in RowDescription, in a prepared statement's Describe and in
pg_attribute; a value too wide for its declared width fails its row with
22003; expression columns (count(*), 1+1, sum) are described with their
first row's type in a prepared statement's Describe (libpq's PQdescribePrepared,
psycopg 3's server-side parameters), not as text.
"""

import subprocess
import unittest

import psycopg2

from harness import WirepoolTestCase, describe, psql

SCHEMA = """
CREATE TABLE languages (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE,
                        rank NUMERIC(5,2) DEFAULT 1.5, created TIMESTAMP);
CREATE TABLE books (id INTEGER PRIMARY KEY, language_id INTEGER REFERENCES languages(id),
                    title TEXT NOT NULL);
CREATE INDEX books_title ON books (title);
CREATE VIEW book_titles AS SELECT title FROM books;
"""


class CatalogTest(WirepoolTestCase):
    databases = """
      - name: app
        driver: sqlite
        connection: app.db
        pool: { mode: transaction, max: 2 }
    """

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        psql(cls.wp.dsn(), input=SCHEMA)

    def q(self, sql):
        return psql(self.wp.dsn(), "-c", sql).stdout.strip()

    def test_psql_lists_tables_indexes_views_schemas_databases(self):
        dt = describe(self.wp.dsn(), r"\dt")
        self.assertRegex(dt, r" public \| books\s+\| table \| wirepool")
        self.assertRegex(dt, r" public \| languages\s+\| table \| wirepool")
        di = describe(self.wp.dsn(), r"\di")
        for index in ("books_pkey", "books_title", "languages_pkey"):
            self.assertIn(index, di)
        self.assertIn(" book_titles | view", describe(self.wp.dsn(), r"\dv"))
        self.assertRegex(describe(self.wp.dsn(), r"\dn"), r"public\s+\| wirepool")
        self.assertRegex(describe(self.wp.dsn(), r"\l"), r"main\s+\| wirepool \| UTF8")
        self.assertIn("(0 rows)", describe(self.wp.dsn(), r"\df"))

    def test_psql_describes_a_table(self):
        out = describe(self.wp.dsn(), r"\d languages")
        self.assertIn('Table "public.languages"', out)
        self.assertRegex(out, r"id\s+\| bigint\s+\|\s+\| not null \|")
        self.assertRegex(out, r"name\s+\| character varying\(40\)\s+\|\s+\| not null \|")
        self.assertRegex(out, r"rank\s+\| numeric\(5,2\)\s+\|\s+\|\s+\| 1\.5")
        self.assertRegex(out, r"created\s+\| timestamp without time zone")
        self.assertIn('"languages_pkey" PRIMARY KEY, btree (id)', out)
        self.assertIn("UNIQUE CONSTRAINT, btree (name)", out)
        self.assertIn('TABLE "books" CONSTRAINT "books_language_id_fkey" FOREIGN KEY (language_id) '
                      "REFERENCES languages(id)", out)
        books = describe(self.wp.dsn(), r"\d books")
        self.assertIn('"books_title" btree (title)', books)
        self.assertIn('"books_language_id_fkey" FOREIGN KEY (language_id) REFERENCES languages(id)',
                      books)

    def test_catalog_follows_schema_changes_in_the_session(self):
        out = psql(self.wp.dsn(), input="CREATE TABLE fresh (a INTEGER);\n"
                   "SELECT relname FROM pg_class WHERE relname = 'fresh';\n"
                   "DROP TABLE fresh;\n"
                   "SELECT count(*) FROM pg_class WHERE relname = 'fresh';\n").stdout.split("\n")
        self.assertEqual(out, ["CREATE TABLE", "fresh", "DROP TABLE", "0", ""])

    def test_prepared_catalog_statement_follows_schema_changes(self):
        import psycopg
        with psycopg.connect(self.wp.kv(), autocommit=True) as c:
            q = "SELECT count(*) FROM pg_class WHERE relname = %s"
            self.assertEqual(int(c.execute(q, ("later",), prepare=True).fetchone()[0]), 0)
            c.execute("CREATE TABLE later (a INTEGER)")
            self.assertEqual(int(c.execute(q, ("later",), prepare=True).fetchone()[0]), 1)

    def test_sqlalchemy_inspector(self):
        script = f"""
import json, sqlalchemy
e = sqlalchemy.create_engine("postgresql+psycopg2://alice:wonderland@127.0.0.1:{self.wp.port}/app")
i = sqlalchemy.inspect(e)
cols = i.get_columns("languages")
print(json.dumps({{"tables": sorted(i.get_table_names()),
                   "views": i.get_view_names(),
                   "columns": [(c["name"], str(c["type"]), c["nullable"]) for c in cols],
                   "pk": i.get_pk_constraint("languages"),
                   "fk": [(f["constrained_columns"], f["referred_table"], f["referred_columns"])
                          for f in i.get_foreign_keys("books")]}}))
"""
        r = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        import json
        got = json.loads(r.stdout)
        self.assertLessEqual({"books", "languages"}, set(got["tables"]))
        self.assertEqual(got["views"], ["book_titles"])
        self.assertEqual(got["columns"], [["id", "BIGINT", False], ["name", "VARCHAR(40)", False],
                                          ["rank", "NUMERIC(5, 2)", True],
                                          ["created", "TIMESTAMP", True]])
        self.assertEqual(got["pk"], {"constrained_columns": ["id"], "name": "languages_pkey"})
        self.assertEqual(got["fk"], [[["language_id"], "languages", ["id"]]])

    def test_casts_and_common_functions(self):
        self.assertEqual(self.q("SELECT 1::int4"), "1")
        self.assertEqual(self.q("SELECT '2'::int + 1"), "3")
        # An expression has no declared type on SQLite: a boolean reads as 1.
        self.assertEqual(self.q("SELECT 't'::boolean, 2.5::text || 'x', 'a'::varchar(5)"),
                         "1|2.5x|a")
        self.assertEqual(self.q("SELECT current_user, session_user"), "alice|alice")
        self.assertRegex(self.q("SELECT now()"), r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
        self.assertEqual(self.q("SELECT 'Ab' ILIKE 'a%', 'x' ~ '^x$', 'x' !~ 'y'"), "1|1|1")
        # Strings, quoted identifiers and comments keep their text.
        self.assertEqual(self.q("SELECT 'a::int', 'current_user' AS \"now()\" -- ::int"),
                         "a::int|current_user")

    def test_psycopg2_bytea_and_parameters(self):
        with psycopg2.connect(self.wp.kv()) as conn, conn.cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS blobs (b BYTEA)")
            cur.execute("INSERT INTO blobs VALUES (%s)", (psycopg2.Binary(b"\x00\x01\xff"),))
            cur.execute("SELECT b, %s::int + 1 FROM blobs", ("41",))
            b, n = cur.fetchone()
            self.assertEqual((bytes(b), n), (b"\x00\x01\xff", 42))

    def test_uncovered_catalog_relation_or_function_is_0A000(self):
        r = psql(self.wp.dsn(), "-v", "VERBOSITY=verbose", "-c",
                 "SELECT * FROM pg_catalog.pg_stat_activity", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("0A000", r.stderr)
        self.assertIn("pg_catalog.pg_stat_activity is not covered", r.stderr)
        r = psql(self.wp.dsn(), "-v", "VERBOSITY=verbose", "-c",
                 "SELECT pg_catalog.pg_size_pretty(1)", check=False)
        self.assertIn("0A000", r.stderr)
        self.assertIn("function pg_size_pretty is not covered", r.stderr)


class FaithfulTypesTest(WirepoolTestCase):
    databases = CatalogTest.databases

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        psql(cls.wp.dsn(), input="CREATE TABLE widths (s SMALLINT, t TINYINT, i INT, m MEDIUMINT, "
             "n INTEGER, b BIGINT, u INT2, v INT4, w INT8);\n"
             "INSERT INTO widths VALUES (1, 2, 3, 4, 5, 6, 7, 8, 9);\n")

    WANT = [21, 21, 23, 23, 20, 20, 21, 23, 20]  # int2, int4, int8 by declared name

    def test_integer_columns_follow_the_declared_name(self):
        import psycopg
        with psycopg.connect(self.wp.kv(), autocommit=True) as c:
            cur = c.execute("SELECT * FROM widths")  # simple protocol: RowDescription
            self.assertEqual([d.type_code for d in cur.description], self.WANT)
            self.assertEqual(cur.fetchone(), (1, 2, 3, 4, 5, 6, 7, 8, 9))
            res = c.pgconn.prepare(b"w", b"SELECT * FROM widths WHERE i > $1")
            desc = c.pgconn.describe_prepared(b"w")
            self.assertEqual([desc.ftype(i) for i in range(desc.nfields)], self.WANT)
            del res
        out = psql(self.wp.dsn(), "-A", "-t", "-c", "SELECT attname, atttypid FROM pg_attribute a JOIN pg_class c "
                   "ON c.oid = a.attrelid WHERE c.relname = 'widths' ORDER BY attnum").stdout.strip()
        self.assertEqual([int(line.split("|")[1]) for line in out.split("\n")], self.WANT)

    def test_char_columns_are_bpchar_with_their_length(self):
        # As PostgreSQL describes CHAR(n): bpchar (1042), typmod n + 4; VARCHAR(n) varchar.
        import psycopg
        psql(self.wp.dsn(), "-c", "CREATE TABLE chars (c CHAR(10), v VARCHAR(20), t TEXT)")
        want = [(1042, 14), (1043, 24), (25, -1)]
        with psycopg.connect(self.wp.kv(), autocommit=True) as c:
            res = c.pgconn.exec_(b"SELECT * FROM chars")  # RowDescription of a simple query
            self.assertEqual([(res.ftype(i), res.fmod(i)) for i in range(res.nfields)], want)
            c.pgconn.prepare(b"ch", b"SELECT * FROM chars WHERE c = $1")
            desc = c.pgconn.describe_prepared(b"ch")
            self.assertEqual([(desc.ftype(i), desc.fmod(i)) for i in range(desc.nfields)], want)
        out = psql(self.wp.dsn(), "-A", "-t", "-c", "SELECT atttypid, atttypmod, format_type(atttypid, "
                   "atttypmod) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                   "WHERE c.relname = 'chars' ORDER BY attnum").stdout.splitlines()
        self.assertEqual(out, ["1042|14|character(10)", "1043|24|character varying(20)",
                               "25|-1|text"])

    def test_value_wider_than_its_declared_width_fails_its_row(self):
        # SQLite stores it (it enforces no width); PostgreSQL clients were told int2.
        psql(self.wp.dsn(), "-c", "CREATE TABLE wide (s SMALLINT)")
        psql(self.wp.dsn(), "-c", "INSERT INTO wide VALUES (70000)")
        with psycopg2.connect(self.wp.kv()) as c, c.cursor() as cur:
            with self.assertRaises(psycopg2.Error) as ctx:
                cur.execute("SELECT s FROM wide")
            self.assertEqual(ctx.exception.pgcode, "22003")
            self.assertIn("out of range for type smallint", str(ctx.exception))

    def test_expression_columns_are_described_by_their_first_row(self):
        import psycopg
        with psycopg.connect(self.wp.kv(), autocommit=True) as c:
            res = c.pgconn.prepare(b"e", b"SELECT count(*), 1 + 1, 2.5 * 2, 'x' || 'y', NULL, "
                                   b"sum(n) FROM widths WHERE n > $1")
            desc = c.pgconn.describe_prepared(b"e")
            # int8, int8, float8, text; NULL has no type, nor has sum() over the
            # rows of an unbound (NULL) parameter, which are none: text
            self.assertEqual([desc.ftype(i) for i in range(desc.nfields)],
                             [20, 20, 701, 25, 25, 25])
            res = c.pgconn.prepare(b"s", b"SELECT sum(n) AS total FROM widths")
            desc = c.pgconn.describe_prepared(b"s")
            self.assertEqual(desc.ftype(0), 20)
            del res
            # psycopg 3 binds server-side: its Describe portal answers the same
            row = c.execute("SELECT count(*), 1 + 1 FROM widths WHERE n > %s", (0,)).fetchone()
            self.assertEqual(row, (1, 2))


if __name__ == "__main__":
    unittest.main()
