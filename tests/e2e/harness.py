"""Shared fixtures for wirepool's end-to-end tests.

Starts a real wirepool binary on a free loopback port with a configuration
written into a fresh temporary directory, and runs real clients against it.
Run with Debian's /usr/bin/python3 (psycopg2 lives there).
"""

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import tempfile
import textwrap
import threading
import time
import unittest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WIREPOOL = os.environ.get("WIREPOOL_BIN", os.path.join(REPO, "build", "wirepool"))
PG_BIN = "/usr/lib/postgresql/15/bin"
PSQL = shutil.which("psql") or os.path.join(PG_BIN, "psql")
PGBENCH = os.path.join(PG_BIN, "pgbench")
NODE_PATH = os.environ.get("NODE_PATH", os.path.join(REPO, "build", "npm", "node_modules"))


def sanitized():
    """The binary under test is an AddressSanitizer build (make test's second pass)."""
    r = subprocess.run(["readelf", "-d", WIREPOOL], capture_output=True, text=True)
    return "libasan" in r.stdout


def free_port():
    """A port nobody listens on right now (bind to 0, read it, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixture_info(env, what):
    """The info.json of the CTest fixture server (tests/fixtures/) that the
    environment variable `env` names; without one the test is skipped."""
    path = os.environ.get(env)
    if not path or not os.path.exists(path):
        raise unittest.SkipTest(f"no {what} fixture (run through ctest, which starts one)")
    with open(path) as f:
        return json.load(f)


def pg_info():
    return fixture_info("WIREPOOL_PG_INFO", "PostgreSQL")


def mariadb_info():
    return fixture_info("WIREPOOL_MARIADB_INFO", "MariaDB")


def mariadb_odbc_entry(name, info, password_env, max_conns=2, more=""):
    """A `databases:` entry (six spaces deep) for the MariaDB fixture `info`
    through MariaDB Connector/ODBC; `more`: one more line of keys."""
    more = f"\n        {more}" if more else ""
    return f"""
      - name: {name}
        driver: odbc
        connection: "Driver={{MariaDB Unicode}};Server={info['host']};Port={info['port']};Database={info['database']};Uid={info['user']}"
        password_env: {password_env}{more}
        pool: {{ mode: transaction, max: {max_conns} }}
    """


def sqlite_odbc_entry(name, path, max_conns=2):
    """A `databases:` entry (six spaces deep) for the SQLite file `path`
    (absolute: SQLite ODBC opens a relative one against the process's working
    directory) through SQLite ODBC."""
    return f"""
      - name: {name}
        driver: odbc
        connection: "Driver={{SQLite3}};Database={path}"
        pool: {{ mode: transaction, max: {max_conns} }}
    """


class Wirepool:
    """One wirepool process with its own state directory.

    `databases` is YAML text for the `databases:` list; by default one SQLite
    database `app` in transaction mode. `server` is extra YAML for `server:`.
    """

    def __init__(self, databases=None, users=None, server="", name="wirepool", tls=None,
                 listener="", tds=False, http=False, nofile=None, binary=None):
        """`tls`: YAML for the top-level tls section (e.g. "{ generate: true }");
        `listener`: extra fields for the PostgreSQL listener (e.g. "tls: required");
        `tds`: also listen for TDS clients on `tds_port` (needs `tls`);
        `http`: also listen for HTTP (/metrics /healthz /readyz) on `http_port`;
        `nofile`: the process's RLIMIT_NOFILE (soft and hard), as `ulimit -n`;
        `binary`: another wirepool executable (bench: an older build held against this one)."""
        self.nofile = nofile
        self.binary = binary or WIREPOOL
        self.dir = tempfile.mkdtemp(prefix=f"{name}-")
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "wirepool.log")
        self.config_path = os.path.join(self.dir, "wirepool.yaml")
        if databases is None:
            databases = """
              - name: app
                driver: sqlite
                connection: app.db
                options: { busy_timeout: 5s }
                pool: { mode: transaction, max: 4 }
            """
        if users is None:
            users = """
              - { name: alice, password: wonderland }
              - { name: bob, password: builder, databases: [app] }
            """
        text = "server:\n  state_dir: state\n"
        if "log:" not in server:
            text += "  log: { level: debug }\n"
        text += textwrap.indent(textwrap.dedent(server).strip("\n"), "  ") + "\n" if server else ""
        extra = f", {listener}" if listener else ""
        text += (f"listeners:\n  - {{ protocol: postgres, address: 127.0.0.1, port: {self.port}"
                 f"{extra} }}\n")
        self.tds_port = free_port() if tds else None
        if tds:
            text += f"  - {{ protocol: tds, address: 127.0.0.1, port: {self.tds_port} }}\n"
        self.http_port = free_port() if http else None
        if http:
            text += f"  - {{ protocol: http, address: 127.0.0.1, port: {self.http_port} }}\n"
        if tls:
            text += f"tls: {tls}\n"
        text += "users:\n" + textwrap.indent(textwrap.dedent(users).strip("\n"), "  ") + "\n"
        text += "databases:\n" + textwrap.indent(textwrap.dedent(databases).strip("\n"), "  ") + "\n"
        with open(self.config_path, "w") as f:
            f.write(text)
        os.makedirs(os.path.join(self.dir, "state"), exist_ok=True)
        self.proc = None
        self.keep = False
        self.stop_report = None

    def start(self, timeout=15):
        self._log = open(self.log_path, "ab")
        # Under AddressSanitizer (make test's second pass) freed memory waits in
        # a quarantine before reuse; keep it small so memory-growth checks
        # measure wirepool, not the quarantine. No effect on other builds.
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "quarantine_size_mb=16")
        limit = None
        if self.nofile:
            import resource
            limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE,  # noqa: E731
                                               (self.nofile, self.nofile))
        self.proc = subprocess.Popen([self.binary, "--config", self.config_path],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=limit)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"wirepool exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"wirepool did not listen on {self.port}:\n{self.log()}")

    def shutdown_grace(self):
        """The configured server.shutdown_grace in seconds (wirepool's default 30 s)."""
        with open(self.config_path) as f:
            m = re.search(r"^\s*shutdown_grace:\s*(\d+)\s*(ms|s|min|h)?\s*$", f.read(), re.M)
        if not m:
            return 30.0
        return int(m.group(1)) * {"ms": 0.001, "s": 1, "min": 60, "h": 3600}[m.group(2) or "s"]

    def stop(self, timeout=None):
        """SIGTERM, then waits for the drain: by default shutdown_grace plus the
        5 s wirepool gives its backends to close, plus a margin. A wirepool still
        running then is killed (exit -9) after the threads' stacks are written
        to `stop-timeout.txt` in the kept state directory (`stop_report`)."""
        if timeout is None:
            timeout = self.shutdown_grace() + 10
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.stop_report = self._dump_stuck(timeout)
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self._log.close()
        return self.proc.returncode if self.proc else None

    def _dump_stuck(self, waited):
        """What a wirepool that did not finish its drain was doing: its threads'
        stacks (gdb), and where the report and the log are kept."""
        self.keep = True
        parts = [f"wirepool (pid {self.proc.pid}) still running {waited:.0f} s after SIGTERM"]
        if shutil.which("gdb"):
            try:
                r = subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch",
                                    "-ex", "thread apply all bt"],
                                   capture_output=True, text=True, timeout=60)
                parts.append(r.stdout)
            except subprocess.TimeoutExpired:
                parts.append("gdb did not answer within 60 s")
        else:
            parts.append("no gdb: no stacks")
        text = "\n".join(parts)
        path = os.path.join(self.dir, "stop-timeout.txt")
        with open(path, "w") as f:
            f.write(text)
        return f"{parts[0]}; stacks and log kept in {self.dir} (stop-timeout.txt, wirepool.log)"

    def cleanup(self):
        self.stop()
        # WIREPOOL_KEEP=1 keeps the state directory and log for a post-mortem,
        # and so does a stop that timed out.
        if os.environ.get("WIREPOOL_KEEP") or self.keep:
            print(f"kept {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def dsn(self, user="alice", password="wonderland", database="app", **extra):
        s = f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"
        if extra:
            s += "?" + "&".join(f"{k}={v}" for k, v in extra.items())
        return s

    def kv(self, user="alice", password="wonderland", database="app"):
        """libpq key=value form (psycopg2)."""
        return (f"host=127.0.0.1 port={self.port} user={user} password={password} "
                f"dbname={database} sslmode=disable")

    def http_get(self, path, timeout=10):
        """(status, headers, body text) of GET `path` on the HTTP listener."""
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read().decode()
        finally:
            c.close()

    def metrics(self):
        """The /metrics scrape as {"name{labels}": value}."""
        status, _, body = self.http_get("/metrics")
        if status != 200:
            raise AssertionError(f"/metrics answered {status}: {body}")
        out = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
        return out

    def certificate(self):
        """The generated certificate (tls: { generate: true })."""
        return os.path.join(self.dir, "state", "tls", "server.crt")

    def open_fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def startup_packet(user="alice", database="app", params=()):
    """A protocol 3.0 StartupMessage; `user` and `database` are text or raw
    bytes; `params`: more (name, value) pairs."""
    body = struct.pack("!I", 196608)
    for k, v in (("user", user), ("database", database), *params):
        body += k.encode() + b"\0" + (v if isinstance(v, bytes) else v.encode()) + b"\0"
    body += b"\0"
    return struct.pack("!I", len(body) + 4) + body


def raw_login(port, user="alice", password="wonderland", database="app", timeout=10,
              tls_ca=None, key=None, params=(), source=None, sock=None):
    """A socket past SCRAM-SHA-256 authentication and the first ReadyForQuery,
    done by hand (no client library), for tests that then send raw bytes.
    With `tls_ca`, TLS is negotiated first (SSLRequest) against that root; with a
    dict `key`, its "pid" and "secret" are set from BackendKeyData; `source`:
    the loopback address to connect from (127.0.0.2, ...); `sock`: a socket
    already connected to `port`, to log in on."""
    s = sock or socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                         source_address=(source, 0) if source else None)
    # As libpq, PgJDBC and node-postgres do: without it the first message after
    # the TLS handshake waits for the server's delayed ACK (~40 ms, Nagle).
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls_ca:
        import ssl
        s.sendall(struct.pack("!II", 8, 80877103))
        if s.recv(1) != b"S":
            raise AssertionError("the server refused TLS")
        ctx = ssl.create_default_context(cafile=tls_ca)
        s = ctx.wrap_socket(s, server_hostname="localhost")
    s.sendall(startup_packet(user, database, params))
    buf = b""

    def read_msg():
        nonlocal buf
        while len(buf) < 5 or len(buf) < 1 + struct.unpack("!I", buf[1:5])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError(f"closed during login: {buf!r}")
            buf += chunk
        n = struct.unpack("!I", buf[1:5])[0]
        t, body, buf = buf[:1], buf[5:1 + n], buf[1 + n:]
        if t == b"E":
            raise AssertionError(f"login refused: {body!r}")
        return t, body

    t, body = read_msg()
    if (t, struct.unpack("!I", body[:4])[0]) != (b"R", 10):
        raise AssertionError(f"expected AuthenticationSASL, got {t!r} {body!r}")
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n=,r={nonce}"
    msg = (b"SCRAM-SHA-256\0" + struct.pack("!i", len("n,," + first_bare)) +
           ("n,," + first_bare).encode())
    s.sendall(b"p" + struct.pack("!I", len(msg) + 4) + msg)
    t, body = read_msg()
    server_first = body[4:].decode()
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored = hashlib.sha256(client_key).digest()
    final_wo_proof = f"c=biws,r={attrs['r']}"
    auth = f"{first_bare},{server_first},{final_wo_proof}".encode()
    sig = hmac.new(stored, auth, "sha256").digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig))).decode()
    final = f"{final_wo_proof},p={proof}".encode()
    s.sendall(b"p" + struct.pack("!I", len(final) + 4) + final)
    while True:
        t, body = read_msg()
        if t == b"K" and key is not None:  # BackendKeyData: the caller wants the cancel key
            key["pid"], key["secret"] = struct.unpack("!ii", body[:8])
        if t == b"Z":
            return s


def tls_connect(port, user, password, database, timeout=20):
    """A psycopg2 connection to 127.0.0.1:`port` over TLS (sslmode=require), autocommit."""
    import psycopg2
    c = psycopg2.connect(host="127.0.0.1", port=port, user=user, password=password,
                         dbname=database, sslmode="require", connect_timeout=timeout)
    c.autocommit = True
    return c


def fetch_rows(conn, sql):
    """All rows of `sql` on a psycopg2 connection."""
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchall()


def tls_login_answer(port, cafile, user, password, database, timeout=20):
    """A login by hand over TLS (trusting `cafile`), `user` and `password` as
    raw bytes, the password sent in cleartext when asked for (passthrough): the
    SQLSTATE and message of the refusal, "closed" if the server closes without
    a word, or "ok" after ReadyForQuery."""
    from wire import Reader, fields
    ctx = ssl.create_default_context(cafile=cafile)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        raw.sendall(struct.pack("!II", 8, 80877103))
        if raw.recv(1) != b"S":
            raise AssertionError("the server refused TLS")
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(startup_packet(user, database))
            r = Reader(s)
            try:
                t, body = r.one()
            except AssertionError:
                return "closed"
            if t == "E":
                f = fields(body)
                return f.get("C"), f.get("M")
            if (t, struct.unpack("!I", body[:4])[0]) != ("R", 3):  # AuthenticationCleartextPassword
                raise AssertionError(f"expected a cleartext password request, got {t!r} {body!r}")
            s.sendall(b"p" + struct.pack("!I", len(password) + 5) + password + b"\0")
            while True:
                t, body = r.one()
                if t == "E":
                    f = fields(body)
                    return f.get("C"), f.get("M")
                if t == "Z":
                    return "ok"


def tedious_query(port, cafile, user, password, database, sql, backend):
    """(kind, value) of one query by tedious (Node 22, strict TDS 8.0) through
    tests/e2e/node/tds.js: ("rows", rows) or ("error", error)."""
    node = os.path.join(NODE_PATH, ".bin", "node")
    if not os.path.isdir(os.path.join(NODE_PATH, "tedious")):
        raise AssertionError(f"tedious is not installed in {NODE_PATH} (make test installs it)")
    cfg = dict(port=port, ca=cafile, user=user, password=password, database=database,
               lib="tedious", encrypt="strict", backend=backend, sql=sql)
    script = os.path.join(REPO, "tests", "e2e", "node", "tds.js")
    r = subprocess.run([node, script, "query", json.dumps(cfg)], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, NODE_PATH=NODE_PATH))
    if "tds query: ok" not in r.stdout:
        raise AssertionError(f"{r.stdout}\n{r.stderr}")
    line = next(line for line in r.stdout.splitlines() if line.startswith("tds query: ") and
                not line.endswith(": ok"))
    kind, _, rest = line[len("tds query: "):].partition(" ")
    return kind, json.loads(rest)


NODE_PG_SCRIPT = """
  const { Client } = require('pg');
  (async () => {
    const c = new Client({ connectionString: process.argv[1] });
    await c.connect();
    const out = [];
    %s
    await c.end();
    console.log(JSON.stringify(out));
  })().catch(e => { console.error(e); process.exit(1); });
"""


def node_pg(dsn, body, timeout=60):
    """Runs `body` (JavaScript with `c`, a connected node-postgres Client, and
    `out`, an array it fills) against `dsn`; returns `out`, or raises
    AssertionError with node's stderr."""
    r = subprocess.run(["node", "-e", NODE_PG_SCRIPT % body, dsn], capture_output=True,
                       text=True, timeout=timeout, env=dict(os.environ, NODE_PATH=NODE_PATH))
    if r.returncode != 0:
        raise AssertionError(f"node-postgres script failed: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def psql(dsn, *args, input=None, check=True, timeout=60, env=None, aligned=False):
    """psql -X -At (without -At when `aligned`) with ON_ERROR_STOP; returns the
    CompletedProcess."""
    e = dict(os.environ, PGCONNECT_TIMEOUT="10", LC_ALL="C.UTF-8")
    if env:
        e.update(env)
    cmd = [PSQL, "-X", *([] if aligned else ["-At"]), "-v", "ON_ERROR_STOP=1", "-d", dsn, *args]
    r = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, env=e)
    if check and r.returncode != 0:
        raise AssertionError(f"psql failed ({r.returncode}): {r.stderr}\n{r.stdout}")
    return r



def describe(dsn, command):
    """psql's own output of a meta-command (aligned, with headers and footers)."""
    return psql(dsn, "-c", command, aligned=True).stdout

def admin_rows(wp, command, user="ops", password="secret"):
    """Rows of an admin console command on `wp` as dicts by column (NULL as "NULL")."""
    r = subprocess.run([PSQL, "-X", "-A", "-F", "|", "-P", "footer=off", "-P", "null=NULL",
                        "-d", wp.dsn(user, password, "wirepool"), "-c", command],
                       capture_output=True, text=True, timeout=60, check=True)
    lines = r.stdout.strip().splitlines()
    if not lines:  # a command without rows (RECONNECT, PAUSE…)
        return []
    header = lines[0].split("|")
    return [dict(zip(header, line.split("|"))) for line in lines[1:]]


class CounterWriters:
    """The failover tests' load: `writers` psycopg2 clients on `dsn` (libpq
    key=value), each incrementing `counter` row 1 and logging (client, seq) in
    `log` in one transaction, from `with` until its end. `acked`: the pairs
    whose COMMIT succeeded; `ambiguous`: those whose COMMIT failed (outcome
    unknown); `commit_times`: time.monotonic() of each acknowledged commit."""

    def __init__(self, dsn, writers=4):
        self.dsn = dsn
        self.acked, self.ambiguous, self.commit_times = set(), set(), []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._writer, args=(c,)) for c in range(writers)]

    def _writer(self, client):
        import psycopg2
        seq, conn = 0, None
        while not self._stop.is_set():
            seq += 1
            try:
                if conn is None:
                    conn = psycopg2.connect(self.dsn, connect_timeout=20)
                cur = conn.cursor()
                cur.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
                cur.execute("INSERT INTO log VALUES (%s, %s)", (client, seq))
            except psycopg2.Error:
                conn = None  # failed before COMMIT: rolled back
                time.sleep(0.02)
                continue
            try:
                conn.commit()
                with self._lock:
                    self.acked.add((client, seq))
                    self.commit_times.append(time.monotonic())
            except psycopg2.Error:
                with self._lock:
                    self.ambiguous.add((client, seq))  # the COMMIT's outcome is unknown
                conn = None

    def __enter__(self):
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)
        return False

    def first_commit_after(self, t):
        """Seconds from `t` to the first acknowledged commit after it, None if none."""
        later = [c for c in self.commit_times if c > t]
        return min(later) - t if later else None

    def assert_exactly_once(self, test, counter, logged):
        """On `test`: the counter read back equals the logged rows, every
        acknowledged commit is logged, and every logged row is one a writer made."""
        test.assertEqual(counter, len(logged), "a transaction applied in part or twice")
        test.assertEqual(self.acked - logged, set(), "acknowledged commits lost")
        test.assertEqual(logged - self.acked - self.ambiguous, set(), "commits no client made")


class WirepoolTestCase(unittest.TestCase):
    """One wirepool per test class; subclasses may override the configuration."""

    databases = None
    users = None
    server = ""
    tls = None
    listener = ""
    tds = False
    http = False
    # Passwords that must never reach wirepool's log: checked after each test.
    secrets = ()

    @classmethod
    def start_backends(cls):
        """What the class needs before wirepool starts (servers, files; it may
        set `databases` from them): none here."""

    @classmethod
    def stop_backends(cls):
        """Undoes start_backends, also a part of it that failed: after wirepool
        stops, or when setting up failed."""

    @classmethod
    def setUpClass(cls):
        try:
            cls.start_backends()
            cls.wp = Wirepool(cls.databases, cls.users, cls.server, name=cls.__name__,
                              tls=cls.tls, listener=cls.listener, tds=cls.tds, http=cls.http)
            cls.wp.start()
        except BaseException:
            cls.stop_backends()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            code = cls.wp.stop()
            log = cls.wp.log()
            report = cls.wp.stop_report
            cls.wp.cleanup()
        finally:
            cls.stop_backends()
        # Every run must end in an orderly drain, never a crash.
        if code not in (0, None):
            why = f"\n{report}" if report else ""
            raise AssertionError(f"wirepool exited with {code}:{why}\n{log[-4000:]}")
        for bad in ("AddressSanitizer", "runtime error:", "critical"):
            if bad in log:
                raise AssertionError(f"wirepool log has '{bad}':\n{log[-4000:]}")

    def tearDown(self):
        log = self.wp.log() if self.secrets else ""
        for secret in self.secrets:
            self.assertNotIn(secret, log, "a password reached the log")

    def connect_tls(self, user, password, database):
        """tls_connect to this wirepool, closed at the end of the test."""
        c = tls_connect(self.wp.port, user, password, database)
        self.addCleanup(c.close)
        return c

    def rows(self, conn, sql):
        return fetch_rows(conn, sql)
