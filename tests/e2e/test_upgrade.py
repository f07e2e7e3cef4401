"""Online restart: two processes on one port with SO_REUSEPORT.

Covers: with `reuse_port: true` a second process binds the listener's port
beside a running one; SIGTERM to the old one drains it — its client inside a
transaction commits, new connections meanwhile reach the new process — and the
old one exits 0 while the new one keeps serving; without `reuse_port` the
second process refuses to start with a one-line error naming the port.
"""

import re
import signal
import subprocess
import time
import unittest

import psycopg2

from harness import WIREPOOL, Wirepool

LISTENER = "reuse_port: true"


def same_port(wp, port):
    """Rewrites `wp`'s configuration to listen on `port`."""
    with open(wp.config_path) as f:
        text = f.read()
    with open(wp.config_path, "w") as f:
        f.write(re.sub(rf"port: {wp.port}\b", f"port: {port}", text))
    wp.port = port


def wait_for(predicate, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


class OnlineRestartTest(unittest.TestCase):

    def test_new_process_beside_the_old_one_which_drains(self):
        old = Wirepool(listener=LISTENER, name="old").start()
        new = Wirepool(listener=LISTENER, name="new")
        try:
            # A client of the old process, inside a transaction.
            inside = psycopg2.connect(old.kv())
            cur = inside.cursor()
            cur.execute("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
            cur.execute("INSERT INTO t VALUES (1)")

            same_port(new, old.port)
            new.start()
            self.assertTrue(wait_for(lambda: "wirepool ready" in new.log()), new.log())

            old.proc.send_signal(signal.SIGTERM)
            self.assertTrue(wait_for(lambda: "draining" in old.log()), old.log())
            time.sleep(0.2)  # the drain closes the old listener right after that line
            # New connections reach the new process while the old one drains.
            for i in range(10):
                c = psycopg2.connect(new.kv())
                c.autocommit = True
                k = c.cursor()
                k.execute("SELECT %s", (i,))
                self.assertEqual(k.fetchone(), (i,))
                c.close()
            self.assertGreaterEqual(new.log().count("connected to database"), 10)
            # The old process's transaction is not cut: it commits, then the
            # old process closes that client and exits.
            cur.execute("INSERT INTO t VALUES (2)")
            inside.commit()
            self.assertEqual(old.proc.wait(20), 0, old.log()[-3000:])
            inside.close()
            c = psycopg2.connect(new.kv())
            k = c.cursor()
            k.execute("SELECT 1")
            self.assertEqual(k.fetchone(), (1,))
            c.close()
        finally:
            old.cleanup()
            self.assertEqual(new.stop(), 0, new.log()[-3000:])
            new.cleanup()

    def test_without_reuse_port_a_second_process_refuses_the_port(self):
        first = Wirepool(name="first").start()
        second = Wirepool(name="second")
        try:
            same_port(second, first.port)
            r = subprocess.run([WIREPOOL, "--config", second.config_path], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"cannot listen on 127.0.0.1:{first.port}", r.stderr)
        finally:
            first.cleanup()
            second.cleanup()


if __name__ == "__main__":
    unittest.main()
