"""node-postgres (pg 8, build/npm/node_modules) sees PostgreSQL through
wirepool: checked differentially (differential.py) against PostgreSQL
directly, through wirepool in session mode and in transaction mode. Each check
is a function of node_pg_checks.js, run by node once per target.

Covers: connection parameters (user, database, encoding, DateStyle,
application_name, BackendKeyData); 100 queries sent without waiting, some
failing; named (prepared) statements with a runtime error, a parse error and
reuse after both, also inside an aborted transaction; 12 clients at once
with different texts under the same statement name; connecting and ending at
once (awaited, and end() before connect() finished); type coercion of 16
JavaScript parameters and 23 result types; notices with their fields and
client_min_messages; application_name set, changed, reset and defaulted; a 1
MiB simple query, 20,000 rows, several statements in one simple query with and
without an error; transactions with savepoints and an error; pg.Pool of 10
under 60 concurrent queries.

Left out: COPY (pg-copy-streams is not in build/npm/node_modules) and SCRAM
with a password SASLprep changes (node-postgres 8.13 does not apply SASLprep,
so PostgreSQL itself refuses it; test_psycopg3 checks it through libpq).
"""

import json
import os
import subprocess
import unittest

from differential import DifferentialCase
from harness import NODE_PATH

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_pg_checks.js")


class NodeCheckFailed(Exception):
    pass


class NodePgTest(DifferentialCase):
    pool_max = 10
    session_pool_max = 12

    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(os.path.join(NODE_PATH, "pg")):
            raise unittest.SkipTest(f"node-postgres is not installed in {NODE_PATH}")
        super().setUpClass()

    def node(self, check):
        """Runs `check` on every target and compares what node-postgres saw."""
        def scenario(t):
            target = dict(t.params(), table=t.table)
            r = subprocess.run(["node", SCRIPT, check], input=json.dumps(target), text=True,
                               capture_output=True, timeout=40,
                               env=dict(os.environ, NODE_PATH=NODE_PATH))
            out = json.loads(r.stdout) if r.stdout else {"failed": r.stderr[-300:]}
            if isinstance(out, dict) and "failed" in out:
                raise NodeCheckFailed(out["failed"])
            return [out]
        scenario.__name__ = "node_" + check
        return self.differ(scenario)

    def test_connection_parameters(self):
        seen = self.node("connection_parameters")
        self.assertEqual(seen[0]["row"]["app"], "node-check")

    def test_pipelined_queries(self):
        self.assertEqual(len(self.node("pipelined_queries")[0]), 100)

    def test_prepared_statement_errors(self):
        self.assertEqual(self.node("prepared_statement_errors")[-1], ("rows", 2))

    def test_colliding_statement_names(self):
        seen = self.node("colliding_statement_names")[0]
        self.assertEqual(seen[11][0], [11, 11])

    def test_quick_connect_then_end(self):
        self.node("quick_connect_then_end")

    def test_type_coercion(self):
        self.assertEqual(len(self.node("type_coercion")[0]["types"]), 23)

    def test_notices(self):
        self.assertEqual(len(self.node("notices")[0]), 4)

    def test_application_name(self):
        self.assertEqual(self.node("application_name")[0][-1], {"application_name": ""})

    def test_big_simple_queries(self):
        self.node("big_simple_queries")

    def test_transactions(self):
        self.assertEqual(self.node("transactions")[-1], ("rows", 2))

    def test_pool_size(self):
        self.assertEqual(self.node("pool_size")[-1], ("rows", 20))


if __name__ == "__main__":
    unittest.main()
