"""Pools per user under one database cap, `pool.max_db_connections`, against
the throwaway PostgreSQL of the CTest fixture `pg`.

Covers: with a cap of 2 and two connections held in transactions by alice,
bob's login waits and times out (53300) instead of opening a third
backend connection, SHOW DATABASES reports the cap and 2 connections; once
alice's transactions end, her idle connections give way at once (without
waiting for idle_timeout) and bob is served, the database never above 2
connections.
"""

import os
import subprocess
import unittest

import psycopg2

from harness import PSQL, WirepoolTestCase
from test_postgresql import database_entry, pg_info


class DatabaseCapTest(WirepoolTestCase):
    users = """
      - { name: alice, password: wonderland }
      - { name: bob, password: builder }
      - { name: ops, password: secret, admin: true }
    """

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.databases = database_entry(cls.info, "app", "transaction", 2,
                                       "max_db_connections: 2, acquire_timeout: 1s, "
                                       "idle_timeout: 10m, pipeline: false")
        super().setUpClass()

    def admin(self, command):
        r = subprocess.run([PSQL, "-X", "-A", "-F", "|", "-P", "footer=off", "-d",
                            self.wp.dsn("ops", "secret", "wirepool"), "-c", command],
                           capture_output=True, text=True, timeout=60, check=True)
        lines = r.stdout.strip().splitlines()
        header = lines[0].split("|")
        return [dict(zip(header, line.split("|"))) for line in lines[1:]]

    def connections(self):
        db = [d for d in self.admin("SHOW DATABASES") if d["name"] == "app"][0]
        return int(db["max_connections"]), int(db["current_connections"])

    def test_the_cap_holds_across_users_and_idle_connections_give_way(self):
        held = []
        for _ in range(2):
            c = psycopg2.connect(self.wp.kv())
            c.cursor().execute("SELECT 1")  # psycopg2 opened a transaction: the backend stays
            held.append(c)
        self.assertEqual(self.connections(), (2, 2))
        # bob's login needs a backend (it reads the server's parameters): it waits
        # its acquire_timeout, then fails.
        with self.assertRaises(psycopg2.OperationalError) as cm:
            psycopg2.connect(self.wp.kv(user="bob", password="builder"))
        self.assertIn("became available within acquire_timeout", str(cm.exception))
        self.assertEqual(self.connections(), (2, 2))
        for c in held:
            c.commit()  # alice's connections are idle now, her pool's min is 0
        bob = psycopg2.connect(self.wp.kv(user="bob", password="builder"))
        bob.autocommit = True
        cur = bob.cursor()
        cur.execute("SELECT 2")
        self.assertEqual(cur.fetchone(), (2,))
        self.assertLessEqual(self.connections()[1], 2)
        pools = {p["user"]: p for p in self.admin("SHOW POOLS") if p["database"] == "app"}
        self.assertIn("bob", pools)
        for c in held:
            c.close()
        bob.close()


if __name__ == "__main__":
    unittest.main()
