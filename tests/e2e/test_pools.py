"""Pools per user under one database cap, `pool.max_db_connections`, against
the throwaway PostgreSQL of the CTest fixture `pg`.

Covers: with a cap of 2 and two connections held in transactions by alice,
bob's login waits and times out (53300) instead of opening a third
backend connection, SHOW DATABASES reports the cap and 2 connections; once
alice's transactions end, her idle connections give way at once (without
waiting for idle_timeout) and bob is served, the database never above 2
connections.

LoginWithoutBackendTest: once a backend of alice's pool has reported its
parameters, alice's later logins are answered from them while her only backend
is held by a transaction (a login no longer waits for a backend), with the same
ParameterStatus values as a login that leased one (TimeZone as the backend
spells it); a startup setting never seen accepted still needs a
backend (and times out while none is free).

ColdPoolLoginTest: a pool dropped as unused (its clients gone, its backend
closed by idle_timeout) hands what it learned to the next pool of the same
user: a login then opens no backend (SHOW SERVERS has none until the first
query), and its ParameterStatus values are PostgreSQL's own for the same
startup options (read from a direct connection).
"""

import os
import threading
import time
import unittest

import psycopg2

from harness import WirepoolTestCase, admin_rows
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
        return admin_rows(self.wp, command)

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


class LoginWithoutBackendTest(WirepoolTestCase):
    users = "- { name: alice, password: wonderland }"

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.databases = database_entry(cls.info, "app", "transaction", 1,
                                       "acquire_timeout: 2s, pipeline: false")
        super().setUpClass()

    # PostgreSQL reports the zone's own spelling (psycopg2 resets DateStyle itself).
    BERLIN = " options='-c TimeZone=europe/berlin'"

    def test_logins_do_not_wait_for_a_backend_once_its_parameters_are_known(self):
        first = psycopg2.connect(self.wp.kv() + self.BERLIN)
        leased = {n: first.get_parameter_status(n)
                  for n in ("DateStyle", "TimeZone", "server_version", "application_name")}
        self.assertEqual(leased["TimeZone"], "Europe/Berlin")
        first.close()
        holder = psycopg2.connect(self.wp.kv())
        holder.cursor().execute("SELECT 1")  # a transaction holds the only backend
        try:
            late = psycopg2.connect(self.wp.kv() + self.BERLIN, connect_timeout=10)
            answered = {n: late.get_parameter_status(n) for n in leased}
            self.assertEqual(answered, leased)
            result = []
            t = threading.Thread(target=lambda: result.append(self._one(late)))
            t.start()
            t.join(0.5)
            self.assertTrue(t.is_alive(), "the statement waits for the held backend")
            holder.commit()
            t.join(10)
            self.assertEqual(result, [("Europe/Berlin",)])
            late.close()
            # A setting no backend accepted yet is checked on one: none is free.
            holder.cursor().execute("SELECT 1")
            with self.assertRaises(psycopg2.OperationalError) as cm:
                psycopg2.connect(self.wp.kv() + " options='-c TimeZone=europe/paris'")
            self.assertIn("became available within acquire_timeout", str(cm.exception))
        finally:
            holder.close()

    @staticmethod
    def _one(conn):
        cur = conn.cursor()
        cur.execute("SHOW TimeZone")
        row = cur.fetchone()
        conn.commit()
        return row


class ColdPoolLoginTest(WirepoolTestCase):
    users = """
      - { name: alice, password: wonderland }
      - { name: ops, password: secret, admin: true }
    """

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.databases = database_entry(cls.info, "app", "transaction", 2, "idle_timeout: 1s")
        super().setUpClass()

    NAMES = ("DateStyle", "TimeZone", "server_version", "server_encoding", "client_encoding",
             "standard_conforming_strings", "integer_datetimes", "IntervalStyle")
    OPTIONS = "-c TimeZone=europe/berlin"

    def _pool_rows(self):
        return [r for r in admin_rows(self.wp, "SHOW POOLS")
                if r["database"] == "app" and r["user"] == "alice"]

    def test_a_dropped_pools_parameters_answer_the_next_login_without_a_backend(self):
        i = self.info
        direct = psycopg2.connect(host=i["host"], port=i["port"], user=i["user"],
                                  password=i["password"], dbname=i["database"],
                                  options=self.OPTIONS)
        expected = {n: direct.get_parameter_status(n) for n in self.NAMES}
        direct.close()
        first = psycopg2.connect(self.wp.kv() + f" options='{self.OPTIONS}'")
        first.close()
        # The backend closes after idle_timeout; the pool goes at the next
        # sweep (every 15 s) once it has neither clients nor connections.
        deadline = time.monotonic() + 60
        while self._pool_rows() and time.monotonic() < deadline:
            time.sleep(1)
        self.assertEqual(self._pool_rows(), [], "the unused pool was dropped")
        late = psycopg2.connect(self.wp.kv() + f" options='{self.OPTIONS}'")
        try:
            servers = [r for r in admin_rows(self.wp, "SHOW SERVERS") if r["database"] == "app"]
            self.assertEqual(servers, [], "the login opened no backend")
            self.assertEqual({n: late.get_parameter_status(n) for n in self.NAMES}, expected)
            cur = late.cursor()
            cur.execute("SHOW TimeZone")
            self.assertEqual(cur.fetchone(), ("Europe/Berlin",))
            late.commit()
        finally:
            late.close()


if __name__ == "__main__":
    unittest.main()
