"""Differential conformance checks: a scenario runs against PostgreSQL directly
and through wirepool (session mode and transaction mode) in the same run, and
what its client observes — every answer's type, tag, values, SQLSTATE and
severity, each ReadyForQuery's status — and the rows it leaves must be the
same. A difference is a bug unless docs/protocol-postgres.md names it as a
limit of transaction pooling that PgBouncer shares.

Scenarios get a Target: `connect()` gives a raw socket past authentication
and its Reader (tests/e2e/wire.py), `table` a table of their own, fresh for
each run (id int primary key, v text), and `rows()` counts it directly on the
server after the scenario. For client libraries a Target also gives `dsn()`
(a libpq URL) and `params()` (host, port, user, password, database).

A check that passes directly but not through wirepool stays, marked with
`known_difference(target, why)`: that target's difference is then expected,
and its disappearance fails the check so that a fix is noticed.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))

from harness import WirepoolTestCase, psql, raw_login  # noqa: E402
from test_postgresql import database_entry, pg_info  # noqa: E402
from wire import Reader  # noqa: E402


class Target:
    def __init__(self, case, name, port, user, password, database, table):
        self.case = case
        self.name = name
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.table = table
        self.sockets = []

    host = "127.0.0.1"

    def dsn(self, **extra):
        """A libpq URL for client libraries: no TLS, a short connect timeout."""
        opts = {"sslmode": "disable", "connect_timeout": "10", **extra}
        return (f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/"
                f"{self.database}?" + "&".join(f"{k}={v}" for k, v in opts.items()))

    def params(self):
        return {"host": self.host, "port": self.port, "user": self.user,
                "password": self.password, "database": self.database}

    def connect(self, params=()):
        s = raw_login(self.port, user=self.user, password=self.password, database=self.database,
                      params=params)
        self.sockets.append(s)
        return s, Reader(s)

    def rows(self):
        r = psql(self.case.direct(), "-c", f"SELECT count(*) FROM {self.table}")
        return int(r.stdout.strip())

    def close(self):
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass
        self.sockets = []


def known_difference(target, why):
    """Marks a check whose `target` ("session" or "transaction") is known to
    differ from PostgreSQL, `why` naming the issue item: the difference is
    expected, and the same result as PostgreSQL's fails the check."""
    def mark(fn):
        fn.known_differences = {**getattr(fn, "known_differences", {}), target: why}
        return fn
    return mark


def first_difference(got, want, name, path="", width=2000):
    """Where two observations first differ, descending into lists and tuples."""
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)):
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                return first_difference(g, w, name, f"{path}[{i}]", width)
        if len(got) != len(want):
            return (f"  at {path or 'top'}: {len(got)} items through wirepool, {len(want)} directly"
                    f"\n  {name}: {got[len(want):]!r:.{width}}\n  direct: {want[len(got):]!r:.{width}}")
    return f"  at {path or 'top'}:\n  {name}: {got!r:.{width}}\n  direct: {want!r:.{width}}"


class DifferentialCase(WirepoolTestCase):
    """wirepool on the fixture's PostgreSQL with `pgsession` (session mode) and
    `pgtxn` (transaction mode), each `pool_max` connections (session mode
    `session_pool_max` if set)."""

    users = "- { name: alice, password: wonderland }"
    pool_max = 2
    session_pool_max = None

    @classmethod
    def setUpClass(cls):
        cls.info = pg_info()
        os.environ["WIREPOOL_TEST_PG_PASSWORD"] = cls.info["password"]
        cls.databases = (database_entry(cls.info, "pgsession", "session",
                                        cls.session_pool_max or cls.pool_max) +
                         database_entry(cls.info, "pgtxn", "transaction", cls.pool_max) +
                         cls.more_databases())
        super().setUpClass()

    @classmethod
    def more_databases(cls):
        """Database entries of a suite's further targets (see targets())."""
        return ""


    @classmethod
    def direct(cls):
        i = cls.info
        return (f"postgresql://{i['user']}:{i['password']}@{i['host']}:{i['port']}/"
                f"{i['database']}")

    def targets(self, table):
        i = self.info
        return [
            Target(self, "direct", i["port"], i["user"], i["password"], i["database"],
                   f"{table}_d"),
            Target(self, "session", self.wp.port, "alice", "wonderland", "pgsession",
                   f"{table}_s"),
            Target(self, "transaction", self.wp.port, "alice", "wonderland", "pgtxn",
                   f"{table}_t"),
        ]

    def differ(self, scenario, table=None, settle=0.0):
        """Runs `scenario(target)` (a list of observations) on every target,
        each with a fresh table, and checks that wirepool's match PostgreSQL's.
        Appends the table's row count after `settle` seconds.
        A client library's exception through wirepool is an observation (its
        type and SQLSTATE); directly it means the check is wrong and is raised.
        Targets named by `known_difference` on the test method must differ."""
        table = table or scenario.__name__.lstrip("_")
        known = getattr(getattr(self, self._testMethodName, None), "known_differences", {})
        seen = {}
        for t in self.targets(table):
            psql(self.direct(), "-c", f"DROP TABLE IF EXISTS {t.table}",
                 "-c", f"CREATE TABLE {t.table} (id int PRIMARY KEY, v text)")
            try:
                got = list(scenario(t))
            except Exception as e:  # noqa: BLE001 - a client library's failure is what we compare
                if t.name == "direct":
                    raise
                got = [("raised", type(e).__name__, getattr(e, "sqlstate", None), str(e)[:300])]
            finally:
                t.close()
            time.sleep(settle)
            got.append(("rows", t.rows()))
            seen[t.name] = got
        problems = []
        for name in (n for n in seen if n != "direct"):
            same = seen[name] == seen["direct"]
            if name in known and same:
                problems.append(f"{name} mode now matches PostgreSQL in {scenario.__name__}: "
                                f"remove known_difference({name!r}, {known[name]!r})")
            elif name not in known and not same:
                problems.append(f"{name} mode differs from PostgreSQL in {scenario.__name__}:\n"
                                + first_difference(seen[name], seen["direct"], name))
        if problems:
            self.fail("\n".join(problems))
        return seen["direct"]
