#!/usr/bin/python3
"""The SQL Server driver's scan rate next to the PostgreSQL driver's.

Starts a throwaway PostgreSQL (tests/fixtures/pgserver.py, TLS) and a wirepool
TDS listener in front of it (tests/fixtures/tdsserver.py), then runs
build/release/bench_tds_scan: a 100,000-row SELECT read through the contract by
the `tds` driver (TDS 8.0 + TLS 1.3 to wirepool's front end, which runs it on
the PostgreSQL driver) and by the `postgresql` driver (TLS 1.3, direct), best
of ROUNDS, alternated. Prints one JSON object with both rates and the TLS record
sizes the TDS driver saw. A measurement, not a test.

Usage: bench/tds_scan.py [ROUNDS]   (after the release build)
"""

import json
import shutil
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
BUILD = os.path.join(ROOT, "build", "release")
FIX = os.path.join(ROOT, "tests", "fixtures")


def main():
    rounds = sys.argv[1] if len(sys.argv) > 1 else "5"
    tmp = tempfile.mkdtemp(prefix="tds-scan-")
    os.chmod(tmp, 0o755)  # the postgres user runs the server inside it
    pg_dir, tds_dir = os.path.join(tmp, "pg"), os.path.join(tmp, "tds")
    py = "/usr/bin/python3"
    subprocess.run([py, os.path.join(FIX, "pgserver.py"), "start", pg_dir, "--tls"], check=True)
    try:
        env = dict(os.environ, WIREPOOL_PG_INFO=os.path.join(pg_dir, "info.json"))
        subprocess.run([py, os.path.join(FIX, "tdsserver.py"), "start", tds_dir,
                        os.path.join(BUILD, "wirepool")], check=True, env=env)
        try:
            with open(os.path.join(pg_dir, "info.json")) as f:
                pg = json.load(f)
            with open(os.path.join(tds_dir, "info.json")) as f:
                tds = json.load(f)
            conninfo = (f"host={pg['host']} port={pg['port']} user={pg['user']} "
                        f"dbname={pg['database']}")
            out = subprocess.run([os.path.join(BUILD, "bench_tds_scan"), tds["host"],
                                  str(tds["port"]), tds["tls"]["ca"], tds["tls"]["pin_sha256"],
                                  conninfo, pg["password"], pg["tls"]["ca"], rounds],
                                 capture_output=True, text=True, timeout=600)
            sys.stderr.write(out.stderr)
            print(out.stdout.strip())
            return out.returncode
        finally:
            subprocess.run([py, os.path.join(FIX, "tdsserver.py"), "stop", tds_dir])
    finally:
        subprocess.run([py, os.path.join(FIX, "pgserver.py"), "stop", pg_dir])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
