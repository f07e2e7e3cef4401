"""PostgreSQL tools on MariaDB (driver mysql) and on MariaDB and SQLite behind
ODBC: the catalog mirrored into an embedded SQLite, and the MariaDB rewrites
(issue #32, docs/catalog.md).

Covers: psql's \\dt, \\d TABLE (columns with PostgreSQL types, NOT NULL,
defaults, primary key, unique and plain indexes, foreign keys), \\di, \\dn, \\l
on driver mysql and on odbc to MariaDB, and \\dt / \\d TABLE on odbc to SQLite;
the catalog following a CREATE TABLE on the same connection, also for a
prepared statement (psycopg 3); SHOW TRANSACTION
ISOLATION LEVEL answered by the session layer; SQLAlchemy's inspector (PostgreSQL dialect, psycopg2): table names, columns, primary key;
a catalog relation not covered answers 0A000 naming it; on MariaDB the
rewrites of `::` casts, version(), current_database(), current_schema,
current_user, now(), pg_backend_pid(), ILIKE and E'' strings, with strings and
comments left alone, and MariaDB's own SQL (information_schema, backticks)
unchanged.
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

import psycopg2

from harness import (WirepoolTestCase, describe, mariadb_info, mariadb_odbc_entry, psql,
                     sqlite_odbc_entry)
from test_mysql import database_entry


SCHEMA = [
    "DROP TABLE IF EXISTS cat_books",
    "DROP TABLE IF EXISTS cat_languages",
    "DROP TABLE IF EXISTS cat_fresh",
    "CREATE TABLE cat_languages (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE, "
    "code CHAR(2), rank DECIMAL(5,2) DEFAULT 1.5, active TINYINT(1), created DATETIME, "
    "big BIGINT, small SMALLINT, note TEXT)",
    "CREATE TABLE cat_books (id INT PRIMARY KEY, language_id INT, title VARCHAR(100) NOT NULL, "
    "CONSTRAINT cat_books_language_fk FOREIGN KEY (language_id) REFERENCES cat_languages(id))",
    "CREATE INDEX cat_books_title ON cat_books (title)",
]

SQLITE_SCHEMA = """
CREATE TABLE cat_items (id INTEGER PRIMARY KEY, label VARCHAR(20) NOT NULL UNIQUE);
CREATE TABLE cat_chars (code CHAR(2), name VARCHAR(40));
"""


class MysqlCatalogTest(WirepoolTestCase):
    users = "- { name: alice, password: wonderland }"
    sqlite_dir = None

    @classmethod
    def start_backends(cls):
        info = mariadb_info()
        os.environ["WIREPOOL_TEST_MARIADB_PASSWORD"] = info["password"]
        cls.sqlite_dir = tempfile.mkdtemp(prefix="wp-catalog-mysql-")
        cls.databases = (database_entry(info, "my", "transaction", 2) +
                         database_entry(info, "my1", "transaction", 1) +
                         mariadb_odbc_entry("odbc_maria", info, "WIREPOOL_TEST_MARIADB_PASSWORD") +
                         sqlite_odbc_entry("odbc_sqlite",
                                           os.path.join(cls.sqlite_dir, "items.db")))

    @classmethod
    def stop_backends(cls):
        if cls.sqlite_dir:
            shutil.rmtree(cls.sqlite_dir, ignore_errors=True)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        args = []
        for s in SCHEMA:
            args += ["-c", s]
        psql(cls.wp.dsn(database="my"), *args)
        for s in SQLITE_SCHEMA.strip().split(";"):
            if s.strip():
                psql(cls.wp.dsn(database="odbc_sqlite"), "-c", s)

    def q(self, sql, database="my"):
        return psql(self.wp.dsn(database=database), "-c", sql).stdout.strip()

    def test_psql_lists_tables_indexes_schemas_databases(self):
        for db in ("my", "odbc_maria"):
            with self.subTest(db=db):
                dsn = self.wp.dsn(database=db)
                dt = describe(dsn, r"\dt")
                self.assertRegex(dt, r" public \| cat_books\s+\| table \| wirepool")
                self.assertRegex(dt, r" public \| cat_languages\s+\| table \| wirepool")
                di = describe(dsn, r"\di")
                for index in ("cat_books_pkey", "cat_books_title", "cat_languages_pkey", "name"):
                    self.assertIn(index, di)
                self.assertRegex(describe(dsn, r"\dn"), r"public\s+\| wirepool")
                self.assertRegex(describe(dsn, r"\l"), r"main\s+\| wirepool \| UTF8")

    def test_psql_describes_a_table(self):
        for db in ("my", "odbc_maria"):
            with self.subTest(db=db):
                dsn = self.wp.dsn(database=db)
                out = describe(dsn, r"\d cat_languages")
                self.assertIn('Table "public.cat_languages"', out)
                self.assertRegex(out, r"id\s+\| integer\s+\|\s+\| not null \|")
                self.assertRegex(out, r"name\s+\| character varying\(40\)\s+\|\s+\| not null \|")
                self.assertRegex(out, r"code\s+\| character\(2\)")
                self.assertRegex(out, r"rank\s+\| numeric\(5,2\)\s+\|\s+\|\s+\| 1\.50?")
                self.assertRegex(out, r"active\s+\| boolean")
                self.assertRegex(out, r"created\s+\| timestamp without time zone")
                self.assertRegex(out, r"big\s+\| bigint")
                self.assertRegex(out, r"small\s+\| smallint")
                self.assertRegex(out, r"note\s+\| text")
                self.assertIn('"cat_languages_pkey" PRIMARY KEY, btree (id)', out)
                # MariaDB keeps a UNIQUE constraint as a unique index of that name.
                self.assertIn('"name" UNIQUE, btree (name)', out)
                # The foreign key's name is the mirror's (SQLite keeps none), its
                # actions MariaDB's (RESTRICT where none was given).
                self.assertIn('TABLE "cat_books" CONSTRAINT "cat_books_language_id_fkey" FOREIGN KEY '
                              "(language_id) REFERENCES cat_languages(id) ON UPDATE RESTRICT "
                              "ON DELETE RESTRICT", out)
                books = describe(dsn, r"\d cat_books")
                self.assertIn('"cat_books_title" btree (title)', books)

    def test_odbc_sqlite_catalog(self):
        dsn = self.wp.dsn(database="odbc_sqlite")
        self.assertRegex(describe(dsn, r"\dt"), r" public \| cat_items\s+\| table \| wirepool")
        out = describe(dsn, r"\d cat_items")
        self.assertRegex(out, r"label\s+\| character varying\(20\)\s+\|\s+\| not null \|")
        self.assertIn('"cat_items_pkey" PRIMARY KEY, btree (id)', out)

    def test_catalog_follows_create_table_on_the_connection(self):
        # One backend connection (my1): DDL through another shows after kCatalogTtl.
        out = psql(self.wp.dsn(database="my1"), input=(
            "CREATE TABLE cat_fresh (a INT);\n"
            "SELECT relname FROM pg_class WHERE relname = 'cat_fresh';\n"
            "DROP TABLE cat_fresh;\n"
            "SELECT count(*) FROM pg_class WHERE relname = 'cat_fresh';\n")).stdout.split("\n")
        self.assertEqual(out, ["CREATE TABLE", "cat_fresh", "DROP TABLE", "0", ""])

    def test_prepared_catalog_statement_follows_schema_changes(self):
        import psycopg
        with psycopg.connect(self.wp.kv(database="my1"), autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS cat_later")
            q = "SELECT count(*) FROM pg_class WHERE relname = %s"
            self.assertEqual(int(c.execute(q, ("cat_later",), prepare=True).fetchone()[0]), 0)
            c.execute("CREATE TABLE cat_later (a INT)")
            self.assertEqual(int(c.execute(q, ("cat_later",), prepare=True).fetchone()[0]), 1)
            c.execute("DROP TABLE cat_later")

    def test_sqlalchemy_inspector(self):
        script = f"""
import json, sqlalchemy
e = sqlalchemy.create_engine("postgresql+psycopg2://alice:wonderland@127.0.0.1:{self.wp.port}/my")
i = sqlalchemy.inspect(e)
cols = i.get_columns("cat_languages")
print(json.dumps({{"tables": sorted(i.get_table_names()),
                   "columns": [(c["name"], str(c["type"]), c["nullable"]) for c in cols][:4],
                   "pk": i.get_pk_constraint("cat_languages")}}))
"""
        r = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        self.assertLessEqual({"cat_books", "cat_languages"}, set(got["tables"]))
        self.assertEqual(got["columns"], [["id", "INTEGER", False], ["name", "VARCHAR(40)", False],
                                          ["code", "CHAR(2)", True],
                                          ["rank", "NUMERIC(5, 2)", True]])
        self.assertEqual(got["pk"], {"constrained_columns": ["id"], "name": "cat_languages_pkey"})

    def test_char_columns_are_bpchar_with_their_length(self):
        # As PostgreSQL describes CHAR(n): bpchar (1042), typmod n + 4, in the
        # RowDescription and in the catalog; VARCHAR(n) varchar.
        import psycopg
        want = [(1042, 6), (1043, 44)]
        for db, table in (("my", "cat_languages"), ("odbc_maria", "cat_languages"),
                          ("odbc_sqlite", "cat_chars")):
            with self.subTest(db=db), psycopg.connect(self.wp.kv(database=db),
                                                      autocommit=True) as c:
                res = c.pgconn.exec_(f"SELECT code, name FROM {table}".encode())
                self.assertEqual([(res.ftype(i), res.fmod(i)) for i in range(res.nfields)], want)
                out = self.q(f"SELECT attname, atttypid, atttypmod FROM pg_attribute a JOIN "
                             f"pg_class c ON c.oid = a.attrelid WHERE c.relname = '{table}' AND "
                             f"attname IN ('code', 'name') ORDER BY attname", database=db)
                self.assertEqual(out.split(), ["code|1042|6", "name|1043|44"])

    def test_uncovered_catalog_relation_is_0A000(self):
        r = psql(self.wp.dsn(database="my"), "-v", "VERBOSITY=verbose", "-c",
                 "SELECT * FROM pg_catalog.pg_stat_activity", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("0A000", r.stderr)
        self.assertIn("pg_catalog.pg_stat_activity is not covered", r.stderr)

    def test_rewrites_on_mariadb(self):
        self.assertEqual(self.q("SELECT 1::int4, '2'::int + 1, '7.5'::numeric(4,1), "
                                "'abc'::varchar(2), 't'::boolean"), "1|3|7.5|ab|1")
        self.assertRegex(self.q("SELECT version()"), r"^PostgreSQL 15\.0 \(wirepool, MariaDB 10")
        self.assertEqual(self.q("SELECT current_database(), current_schema(), current_schema, "
                                "current_user, session_user"),
                         f"{mariadb_info()['database']}|public|public|alice|alice")
        # Microseconds, trailing zeros dropped as PostgreSQL prints them.
        self.assertRegex(self.q("SELECT now(), current_timestamp"),
                         r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?\|")
        self.assertRegex(self.q("SELECT pg_backend_pid()"), r"^\d+$")
        self.assertEqual(self.q("SELECT 'Ab' ILIKE 'a%', E'a\\tb' = concat('a', char(9), 'b')"),
                         "1|1")
        self.assertEqual(self.q("SHOW TRANSACTION ISOLATION LEVEL"), "serializable")
        # Strings and comments keep their text; MariaDB's own SQL reaches it unchanged.
        self.assertEqual(self.q("SELECT 'a::int', 'current_user' -- ::int"), "a::int|current_user")
        self.assertEqual(self.q("SELECT count(*) > 0 FROM information_schema.TABLES "
                                "WHERE TABLE_NAME = `TABLE_NAME`"), "1")


if __name__ == "__main__":
    unittest.main()
