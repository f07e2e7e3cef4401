#!/usr/bin/python3
"""Memory per idle authenticated client: RSS of wirepool before and after N
clients have logged in (SCRAM-SHA-256) and sit idle, and once they have left
(after the connection count has settled and the server's trim has run).

Usage: bench/idle_clients.py [N] [--tls]   (default 5000; run as /usr/bin/python3)
With --tls every client negotiates TLS 1.3 (SSLRequest) first.
Prints one JSON object. A measurement, not a test: no threshold is asserted.
"""

import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
from harness import Wirepool, raw_login  # noqa: E402


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tls = "--tls" in sys.argv
    n = int(args[0]) if args else 5000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 1000)), hard))
    wp = Wirepool(server="log: { level: warn }\nmax_clients: 100000\n", name="idle",
                  tls="{ generate: true }" if tls else None)
    wp.start()
    ca = os.path.join(wp.dir, "state", "tls", "server.crt") if tls else None
    try:
        # Warm up: one client connects and leaves, so one-time allocations are made.
        raw_login(wp.port, tls_ca=ca).close()
        time.sleep(0.5)
        before = wp.rss_kib()
        started = time.time()
        socks = [raw_login(wp.port, tls_ca=ca) for _ in range(n)]
        login_s = time.time() - started
        time.sleep(2)
        after = wp.rss_kib()
        result = {
            "tls": tls,
            "clients": n,
            "rss_before_kib": before,
            "rss_after_kib": after,
            "bytes_per_idle_client": round((after - before) * 1024 / n),
            "logins_per_second": round(n / login_s),
        }
        for s in socks:
            s.close()
        # The server looks at its connection count once a second and trims
        # once it has stopped falling.
        time.sleep(4)
        left = wp.rss_kib()
        result["rss_left_kib"] = left
        result["left_over_start"] = round(left / before, 3)
        print(json.dumps(result))
    finally:
        wp.cleanup()


if __name__ == "__main__":
    main()
