#!/usr/bin/python3
"""Failover time through wirepool, over several runs (docs/high-availability.md).

Each run starts a PostgreSQL 15 primary with a synchronous streaming standby
(tests/fixtures/pgserver.py), a wirepool with both in `hosts:`, four psycopg2
writers (a counter and a log row per transaction), kills the primary
(-m immediate), promotes the standby 0.5 s later, and measures the time from
the start of `pg_ctl promote -w` to the first commit after it (an upper
bound: it includes the promotion itself). It checks that no
acknowledged commit is lost and none applied twice (the counter equals the
logged rows). Prints one line per run, then the median and the maximum.

    /usr/bin/python3 bench/failover.py [--runs 5] [--bin build/release/wirepool]
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from harness import Wirepool  # noqa: E402
from test_failover import USERS, FailoverTest, cluster, failover_under_load, fixture  # noqa: E402
from test_failover import make_counter_tables  # noqa: E402


def one_run(binary, n):
    d, info = cluster(f"bench{n}")
    wp = None
    try:
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = info["password"]
        make_counter_tables(info)
        FailoverTest.info = info
        wp = Wirepool(FailoverTest.entry(), USERS, "log: { level: info }", name="failover",
                      binary=binary).start()
        r = failover_under_load(wp, d, info, after=3.0)
        lost = len(r["acked"] - r["logged"])
        doubled = r["counter"] - len(r["logged"])
        return r["failover_s"], lost, doubled, len(r["acked"]), len(r["ambiguous"])
    finally:
        if wp:
            wp.stop()
            wp.cleanup()
        fixture("stop", d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "release", "wirepool"))
    args = ap.parse_args()
    times = []
    for n in range(args.runs):
        t, lost, doubled, acked, ambiguous = one_run(os.path.abspath(args.bin), n)
        print(f"run {n + 1}: failover {t if t is None else round(t, 3)} s, commits {acked}, "
              f"ambiguous {ambiguous}, lost {lost}, applied twice {doubled}", flush=True)
        if t is not None:
            times.append(t)
    if times:
        print(f"failover over {len(times)} runs: median {statistics.median(times):.3f} s, "
              f"max {max(times):.3f} s")


if __name__ == "__main__":
    main()
