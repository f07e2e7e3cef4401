#!/usr/bin/python3
"""Captures what FreeTDS 1.3 (Debian freetds-bin's `tsql`, TDS 7.4) sends:
PRELOGIN, LOGIN7 and a SQL batch, through capture_pytds.py's stub server
(ENCRYPT_NOT_SUP, so FreeTDS's default "request" encryption logs in in the
clear). Files: OUTDIR/freetds_<n>_<what>.hex.

    /usr/bin/python3 capture_freetds.py OUTDIR
"""

import os
import socket
import subprocess
import sys
import threading

sys.argv = sys.argv[:2]
import capture_pytds as cap  # noqa: E402

cap.PREFIX = "freetds"
os.makedirs(cap.OUT, exist_ok=True)
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
port = listener.getsockname()[1]
t = threading.Thread(target=cap.serve, args=(listener,), daemon=True)
t.start()
env = dict(os.environ, TDSVER="7.4")
subprocess.run(["tsql", "-H", "127.0.0.1", "-p", str(port), "-U", "demo", "-P", "Pässwörd!1",
                "-D", "demo"], input=b"SELECT N'h\xc3\xa9llo'\ngo\nexit\n", env=env, timeout=20,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
t.join(5)
