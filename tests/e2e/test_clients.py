"""Real client libraries other than libpq: node-postgres (npm `pg`) and PgJDBC
(Debian libpostgresql-jdbc-java on Java 17).

Covers: node-postgres's extended protocol with bound parameters (the cases are
listed at the top of node/roundtrip.js); PgJDBC connecting unconfigured (it
sends extra_float_digits and application_name at startup) and 16 threads
running server-side prepared statements past prepareThreshold over a pool of 4
connections in transaction mode, every row checked.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

from harness import NODE_PATH, REPO, WirepoolTestCase

HERE = os.path.dirname(os.path.abspath(__file__))
JDBC_JAR = "/usr/share/java/postgresql.jar"


class NodePostgresTest(WirepoolTestCase):

    def test_roundtrip(self):
        if not os.path.isdir(os.path.join(NODE_PATH, "pg")):
            self.fail(f"node-postgres is not installed in {NODE_PATH} (make test installs it)")
        r = subprocess.run(["node", os.path.join(HERE, "node", "roundtrip.js"), self.wp.dsn()],
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, NODE_PATH=NODE_PATH))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + self.wp.log()[-3000:])
        self.assertIn("node-postgres: ok", r.stdout)


class PgJdbcTest(WirepoolTestCase):

    def test_prepared_statements_from_many_threads(self):
        work = tempfile.mkdtemp(prefix="jdbc-")
        try:
            src = os.path.join(HERE, "java", "JdbcTest.java")
            subprocess.run(["javac", "-d", work, "-cp", JDBC_JAR, src], check=True,
                           capture_output=True, timeout=300)
            url = f"jdbc:postgresql://127.0.0.1:{self.wp.port}/app"
            r = subprocess.run(["java", "-cp", f"{work}:{JDBC_JAR}", "JdbcTest", url, "alice",
                                "wonderland", "16"], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr + self.wp.log()[-3000:])
            self.assertIn("jdbc: ok", r.stdout)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
