"""Memory under connection churn (issue 26 item 14), against the throwaway
PostgreSQL of the CTest fixture `pg`; the long form is `make soak`
(bench/soak.py, docs/testing.md).

Covers: two relayed clients with different startup settings (application_name)
taking turns on one backend, 200 rounds: wirepool puts each one's settings
back on the backend before its batch, and the server's ParameterStatus
answers to that are kept nowhere, so the client hears none of them even on a
later statement of the ordinary path (PostgreSQL sends none for these
statements either; they used to pile up in the relayed session, 1 per round,
and reach the client all at once).
"""

import os

from harness import WirepoolTestCase, raw_login
from test_postgresql import database_entry, pg_info
from wire import Reader, query


class ChurnTest(WirepoolTestCase):
    users = "- { name: alice, password: wonderland }"

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.databases = database_entry(cls.info, "pgone", "transaction", 1)
        super().setUpClass()

    def client(self, application_name):
        s = raw_login(self.wp.port, database="pgone",
                      params=(("application_name", application_name),))
        return s, Reader(s)

    def test_settings_put_back_for_a_relayed_client_are_not_reported_to_it(self):
        a, ra = self.client("alpha")
        b, rb = self.client("beta")
        try:
            reports = []

            def ask(sock, reader, sql):
                sock.sendall(query(sql))
                msgs, status = reader.until_ready()
                self.assertEqual(status, "I", msgs)
                self.assertFalse([m for m in msgs if m[0] == "E"], msgs)
                reports.extend(body for t, body in msgs if t == "S" and sock is a)
                return msgs

            for _ in range(200):  # one backend: each batch follows the other client's
                ask(a, ra, "SELECT 1")
                ask(b, rb, "SELECT 2")
            ask(a, ra, "SELECT 1")  # the backend is a's again: nothing to put back next
            # The ordinary path (not relayed) passes on what a session holds.
            msgs = ask(a, ra, "SELECT 3; SHOW application_name")
            self.assertIn(b"alpha", b"".join(body for t, body in msgs if t == "D"))
            self.assertEqual(len(reports), 0, f"ParameterStatus messages, first {reports[:1]}")
        finally:
            a.close()
            b.close()


if __name__ == "__main__":
    import unittest
    unittest.main()
