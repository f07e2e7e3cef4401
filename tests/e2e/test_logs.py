"""Log lines carry client-supplied text escaped: no client can forge a line or
send a terminal escape through wirepool's log.

Covers, in the text and the JSON format: a raw startup packet whose user name
holds a newline followed by a forged "connected to the admin console" line, an
ANSI escape (ESC [31m), a carriage return and an invalid UTF-8 byte (the failed
login logs the user name); the same in the database name of an authenticated
client (the unknown-database line logs it). The log then has no line the client
wrote, no raw ESC or CR, decodes as UTF-8, and (JSON) every line is one object.
"""

import unittest

from harness import Wirepool, raw_login

FORGED = "ops\" connected to the admin console (pid 1)"
# Bytes: \xff is not UTF-8 (a str would encode it as two valid bytes).
USER = (b"mallory\n2030-01-01T00:00:00.000 info  client 10.0.0.1:1: user \"" + FORGED.encode() +
        b"\x1b[31m\r\xff")
DATABASE = b"nowhere\nINFO forged database line\x1b]0;title\x07\x1b[0m"


def inject(wp):
    """A failed login with the hostile user name, then an authenticated
    client asking for the hostile database name."""
    for user, password, database in ((USER, "wrong", "app"), ("alice", "wonderland", DATABASE)):
        try:
            s = raw_login(wp.port, user=user, password=password, database=database)
            s.close()
        except (AssertionError, OSError):
            pass  # refused, as it must be


class LogInjectionTest(unittest.TestCase):

    def run_with(self, log_format):
        wp = Wirepool(server=f"log: {{ level: info, format: {log_format} }}\n",
                      name=f"loginject-{log_format}").start()
        try:
            inject(wp)
        finally:
            code = wp.stop()
            with open(wp.log_path, "rb") as f:
                raw = f.read()
            wp.cleanup()
        self.assertEqual(code, 0)
        return raw

    def check_common(self, raw):
        self.assertNotIn(b"\x1b", raw)
        self.assertNotIn(b"\r", raw)
        self.assertNotIn(b"\x07", raw)
        text = raw.decode("utf-8")  # strict: an invalid byte fails here
        lines = text.splitlines()
        # The client's text is there, escaped, inside the line that logs it...
        self.assertTrue(any("mallory" in l and "authentication failed" in l for l in lines), text)
        self.assertTrue(any("nowhere" in l and "unknown database" in l for l in lines), text)
        # ...and no line starts with what followed its newline.
        for l in lines:
            self.assertFalse(l.startswith("2030-01-01"), l)
            self.assertFalse(l.startswith("INFO forged"), l)
        return lines

    def test_text_format_escapes_control_characters(self):
        lines = self.check_common(self.run_with("text"))
        failed = [l for l in lines if "authentication failed" in l]
        self.assertEqual(len(failed), 1, lines)
        self.assertIn("mallory\\n2030-01-01", failed[0])
        self.assertIn("\\x1b[31m\\r\\xff", failed[0])
        # The forged admin line only ever appears inside the failed-login line.
        forged = [l for l in lines if "connected to the admin console" in l]
        self.assertEqual(forged, failed)

    def test_json_format_is_valid_utf8_one_object_per_line(self):
        import json
        lines = self.check_common(self.run_with("json"))
        msgs = [json.loads(l)["msg"] for l in lines]
        failed = [m for m in msgs if "authentication failed" in m]
        self.assertEqual(len(failed), 1, msgs)
        # Control characters come back from JSON as themselves; the invalid byte
        # as the text \xff.
        self.assertIn("mallory\n2030-01-01", failed[0])
        self.assertIn("\x1b[31m\r\\xff", failed[0])


if __name__ == "__main__":
    unittest.main()
