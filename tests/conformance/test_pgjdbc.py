"""PgJDBC (Debian libpostgresql-jdbc-java, Java 17) sees PostgreSQL through
wirepool: checked differentially (differential.py) against PostgreSQL
directly, through wirepool in session mode and in transaction mode. Each check
is a method of java/PgJdbcChecks.java, run once per target; what it prints is
compared line by line.

Covers: prepareThreshold=1 (a named server-side statement from the first
execution) with int, text and numeric parameters, and a runtime error
(division by zero) among executions of one statement; batch inserts of 300
rows with and without reWriteBatchedInserts, and a batch with a duplicate key
in the middle with autocommit on (nothing of the batch stays: PgJDBC sends it
before one Sync) and off (rolled back); savepoints with an error and a
rollback to the savepoint, commit and rollback; cursor-based fetching
(autocommit off, setFetchSize 7 over 50 rows: Execute with a row limit on an
open portal) and getGeneratedKeys; 15 result types through getObject;
DatabaseMetaData getTables, getColumns and getPrimaryKeys.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

from differential import DifferentialCase

HERE = os.path.dirname(os.path.abspath(__file__))
JDBC_JAR = "/usr/share/java/postgresql.jar"


class PgJdbcTest(DifferentialCase):
    pool_max = 3

    @classmethod
    def setUpClass(cls):
        if not (os.path.exists(JDBC_JAR) and shutil.which("javac")):
            raise unittest.SkipTest("PgJDBC or javac is not installed")
        cls.classes = tempfile.mkdtemp(prefix="pgjdbc-")
        subprocess.run(["javac", "-d", cls.classes, "-cp", JDBC_JAR,
                        os.path.join(HERE, "java", "PgJdbcChecks.java")],
                       check=True, capture_output=True, timeout=120)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.classes, ignore_errors=True)

    def jdbc(self, check):
        def scenario(t):
            p = t.params()
            r = subprocess.run(["java", "-cp", f"{self.classes}:{JDBC_JAR}", "PgJdbcChecks", check,
                                p["host"], str(p["port"]), p["database"], p["user"],
                                p["password"], t.table],
                               capture_output=True, text=True, timeout=90)
            if r.returncode != 0:
                raise RuntimeError(f"PgJdbcChecks {check} failed: {r.stderr[-800:]}")
            return r.stdout.splitlines()
        scenario.__name__ = "jdbc_" + check
        return self.differ(scenario)

    def test_prepared_statements_past_the_threshold(self):
        self.jdbc("prepared")

    def test_batches(self):
        self.jdbc("batches")

    def test_transactions_and_savepoints(self):
        self.jdbc("transactions")

    def test_fetch_size_and_generated_keys(self):
        self.jdbc("fetch_size")

    def test_result_types(self):
        self.jdbc("types")

    def test_database_metadata(self):
        self.jdbc("metadata")


if __name__ == "__main__":
    unittest.main()
