"""A network partition between wirepool and a standby
(docs/high-availability.md#network-partitions). The standby runs in a network
namespace of its own behind a veth pair (it streams from the primary over the
primary's Unix socket, which the namespace shares); wirepool reaches it at the
pair's address. Cutting the link (the namespace's end set down) drops packets
without a reset or an unreachable error, as a partition does. Needs root
(`ip netns`, `ip link`): skipped otherwise.

PartitionTest:
  a. reads through `app_ro` run on the standby; the link is cut: SHOW HOSTS
     says the standby is banned within the health-check bound (interval +
     failures_to_ban x (timeout + failover_interval), 1.3 s here; 5 s allowed
     on a loaded host), and a new read through `app_ro` runs on the primary
     (fallback: primary); the link back, the standby takes reads again.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import psycopg2

from harness import WirepoolTestCase, admin_rows

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                       "pgserver.py")
PG_BIN = "/usr/lib/postgresql/15/bin"
BAN_BOUND_S = 5.0


def fixture(*args):
    subprocess.run([sys.executable, FIXTURE, *args], check=True, capture_output=True)


def ip(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=10)


def netns_works():
    if os.geteuid() != 0:
        return False
    name = f"wpchk{os.getpid()}"
    ok = ip("netns", "add", name).returncode == 0
    if ok:
        ip("netns", "del", name)
    return ok


@unittest.skipUnless(netns_works(), "needs root and `ip netns add`")
class PartitionTest(WirepoolTestCase):
    users = """
      - { name: alice, password: wonderland }
      - { name: ops, password: secret, admin: true }
    """
    dir = None
    ns = None

    @classmethod
    def start_backends(cls):
        pid = os.getpid()
        cls.ns, cls.veth = f"wpns{pid}", f"wpv{pid}"
        net = f"10.231.{pid % 250}"
        cls.host_ip, cls.standby_ip = f"{net}.1", f"{net}.2"
        for args, ns in ((("netns", "add", cls.ns), None),
                         (("link", "add", cls.veth + "a", "type", "veth", "peer", "name",
                           cls.veth + "b"), None),
                         (("link", "set", cls.veth + "b", "netns", cls.ns), None),
                         (("addr", "add", cls.host_ip + "/30", "dev", cls.veth + "a"), None),
                         (("link", "set", cls.veth + "a", "up"), None),
                         (("addr", "add", cls.standby_ip + "/30", "dev", cls.veth + "b"), cls.ns),
                         (("link", "set", cls.veth + "b", "up"), cls.ns),
                         (("link", "set", "lo", "up"), cls.ns)):
            r = ip(*args, ns=ns)
            if r.returncode != 0:
                raise RuntimeError(f"ip {' '.join(args)}: {r.stderr}")
        cls.dir = tempfile.mkdtemp(prefix="partition-")
        fixture("start", cls.dir)
        fixture("standby", cls.dir, "--name=standby")
        with open(os.path.join(cls.dir, "info.json")) as f:
            cls.info = json.load(f)
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        # The standby again, now in the namespace, listening on the pair's address.
        sb = cls.info["nodes"]["standby"]
        owner = ["runuser", "-u", "postgres", "--"]
        subprocess.run(owner + [f"{PG_BIN}/pg_ctl", "-D", sb["data"], "-m", "fast", "-w", "stop"],
                       check=True, capture_output=True)
        with open(os.path.join(sb["data"], "pg_hba.conf"), "a") as f:
            f.write(f"host all all {cls.host_ip}/32 scram-sha-256\n")
        subprocess.run(["ip", "netns", "exec", cls.ns] + owner + [
            f"{PG_BIN}/pg_ctl", "-D", sb["data"], "-o",
            f"-p {sb['port']} -k {sb['socket_dir']} -c listen_addresses={cls.standby_ip}",
            "-l", os.path.join(sb["socket_dir"], "log"), "-w", "start"],
                       check=True, capture_output=True)
        cls.standby_addr = f"{cls.standby_ip}:{sb['port']}"
        cls.databases = f"""
          - name: app
            driver: postgresql
            connection: "user=wirepool dbname=wirepool connect_timeout=2"
            password_env: WIREPOOL_TEST_PG_PASSWORD
            hosts:
              - {{ host: 127.0.0.1, port: {cls.info['port']} }}
              - {{ host: {cls.standby_ip}, port: {sb['port']} }}
            read_only: {{ name: app_ro, fallback: primary }}
            health_check: {{ interval: 200ms, timeout: 500ms, failover_interval: 100ms,
                             failures_to_ban: 2, ban_time: 500ms, failover_timeout: 5s }}
            pool: {{ mode: transaction, max: 2, acquire_timeout: 10s }}
        """

    @classmethod
    def stop_backends(cls):
        if cls.dir:
            fixture("stop", cls.dir)
        if cls.ns:
            ip("link", "del", cls.veth + "a")
            ip("netns", "del", cls.ns)

    def standby_row(self):
        for r in admin_rows(self.wp, "SHOW HOSTS"):
            if r["database"] == "app_ro" and r["host"] == self.standby_addr:
                return r
        return {}

    def wait_row(self, want, timeout):
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            r = self.standby_row()
            if all(r.get(k) == v for k, v in want.items()):
                return time.monotonic() - start
            time.sleep(0.05)
        self.fail(f"SHOW HOSTS never said {want} for the standby: {self.standby_row()}")

    def read(self):
        """Which server answers a read through app_ro: True for the standby."""
        c = psycopg2.connect(self.wp.kv(database="app_ro"), connect_timeout=10)
        try:
            cur = c.cursor()
            cur.execute("SELECT pg_is_in_recovery()")
            return cur.fetchone()[0]
        finally:
            c.close()

    def test_a_a_cut_standby_is_banned_and_reads_go_to_the_primary(self):
        self.wait_row({"role": "standby", "reads": "yes"}, 10)
        self.assertTrue(self.read(), "reads run on the standby before the cut")
        self.assertEqual(ip("link", "set", self.veth + "b", "down", ns=self.ns).returncode, 0)
        try:
            banned_after = self.wait_row({"role": "banned"}, 15)
            print(f"\nstandby banned {banned_after:.2f} s after the cut", file=sys.stderr)
            self.assertLess(banned_after, BAN_BOUND_S)
            t0 = time.monotonic()
            self.assertFalse(self.read(), "a read after the ban runs on the primary")
            print(f"read on the primary {time.monotonic() - t0:.2f} s after the ban",
                  file=sys.stderr)
        finally:
            ip("link", "set", self.veth + "b", "up", ns=self.ns)
        back = self.wait_row({"role": "standby", "reads": "yes"}, 15)
        print(f"standby takes reads again {back:.2f} s after the link is back", file=sys.stderr)
        # The read-only pool moves back to the standby (its connections replaced).
        deadline = time.monotonic() + 10
        while not self.read() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(self.read(), "reads back on the standby")


if __name__ == "__main__":
    unittest.main()
