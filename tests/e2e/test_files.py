"""Files and their modes: what wirepool creates is its own, and secrets that
every local user may read are reported.

Covers: a state_dir that does not exist yet is created 0700, and the SQLite
file, the auth secret and a generated TLS key in it are 0600, whatever the
umask wirepool was started with (0022 here); at start, a world-readable
configuration holding a plaintext password, a world-readable password_file and
tls.key each get a warning that names the file (a 0600 one gets none); after
chmod o-r and SIGHUP the warnings stop, and a reload with a world-readable file
warns again.
"""

import os
import signal
import stat
import time
import unittest

import psycopg2

from harness import Wirepool


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


class FilesTest(unittest.TestCase):

    def setUp(self):
        self.wp = Wirepool(tls="{ generate: true }", http=True, name="files", databases="""
          - name: app
            driver: sqlite
            connection: app.db
          - name: remote
            driver: postgresql
            connection: host=127.0.0.1 port=1 dbname=remote user=remote
            password_file: remote.pw
        """)
        # A state directory wirepool has to create itself.
        with open(self.wp.config_path) as f:
            text = f.read()
        with open(self.wp.config_path, "w") as f:
            f.write(text.replace("state_dir: state", "state_dir: fresh"))
        self.state = os.path.join(self.wp.dir, "fresh")
        self.password_file = os.path.join(self.state, "remote.pw")
        self.addCleanup(self.wp.cleanup)

    def start(self):
        old = os.umask(0o022)
        try:
            self.wp.start()
        finally:
            os.umask(old)

    def warnings(self):
        return [l for l in self.wp.log().splitlines() if "readable by every local user" in l]

    def sighup_and_wait(self):
        before = self.wp.log().count("configuration reloaded")
        self.wp.proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.wp.log().count("configuration reloaded") > before:
                time.sleep(0.2)  # the TLS reload and its line come after
                return
            time.sleep(0.05)
        self.fail(f"no reload:\n{self.wp.log()[-3000:]}")

    def test_created_files_are_private(self):
        # Without the remote database, whose password_file would have to exist
        # (wirepool reads it at start) in the state_dir it must create.
        with open(self.wp.config_path) as f:
            text = f.read()
        with open(self.wp.config_path, "w") as f:
            f.write(text.split("  - name: remote")[0])
        self.start()
        conn = psycopg2.connect(self.wp.kv())
        conn.autocommit = True
        conn.cursor().execute("CREATE TABLE IF NOT EXISTS t (v INTEGER)")
        conn.close()
        self.assertEqual(mode(self.state), 0o700)
        for name in ("app.db", os.path.join("tls", "server.key"), os.path.join("tls", "server.crt")):
            self.assertEqual(mode(os.path.join(self.state, name)), 0o600, name)
        self.assertEqual(mode(os.path.join(self.state, "tls")), 0o700)
        secrets = [n for n in os.listdir(self.state) if n not in ("app.db", "tls")]
        for name in secrets:
            self.assertEqual(mode(os.path.join(self.state, name)) & 0o077, 0, name)

    def test_world_readable_secrets_are_reported_at_start_and_reload(self):
        os.makedirs(os.path.join(self.state, "tls"))
        with open(self.password_file, "w") as f:
            f.write("secret\n")
        os.chmod(self.password_file, 0o644)
        os.chmod(self.wp.config_path, 0o644)  # it holds alice's plaintext password
        self.start()
        warned = self.warnings()
        self.assertEqual(len(warned), 2, warned)
        self.assertTrue(any(self.wp.config_path in l and "holds passwords" in l for l in warned))
        self.assertTrue(any(self.password_file in l and "0644" in l for l in warned))
        self.assertNotIn("secret", "\n".join(warned))
        # The generated key is 0600: no warning. Make it readable; fix the others.
        key = os.path.join(self.state, "tls", "server.key")
        os.chmod(key, 0o644)
        os.chmod(self.password_file, 0o600)
        os.chmod(self.wp.config_path, 0o600)
        self.sighup_and_wait()
        warned = self.warnings()[2:]
        self.assertEqual(len(warned), 1, warned)
        self.assertIn("tls.key " + key, warned[0])
        os.chmod(key, 0o600)
        self.sighup_and_wait()
        self.assertEqual(self.warnings()[3:], [])


if __name__ == "__main__":
    unittest.main()
