"""Packaging: the systemd unit, sd_notify, the install steps, the container
image's package list, the Kubernetes manifests, the Grafana dashboard, and
secrets in logs.

Covers: `systemd-analyze verify` on a copy of deploy/systemd/wirepool.service
whose ExecStart points at the built binary, and the unit's hardening; READY=1,
RELOADING=1 then READY=1 on SIGHUP, STOPPING=1 on SIGTERM over NOTIFY_SOCKET;
deploy/install.sh (the Dockerfile's install step) into a scratch root, then the
installed binary checks the example configuration and answers /healthz as the
image's HEALTHCHECK asks it; every shared library the binary needs comes from a
package the Dockerfile's runtime stage installs, and its build stage installs
the Makefile's build packages; the Kubernetes manifests hang together (probes on
the HTTP listener, the drain inside terminationGracePeriodSeconds, the Secret
behind password_env) and their configuration passes --check-config; every metric
the Grafana dashboard queries is exported; JSON log lines carry stable fields and
no password from connection strings, password_env, URIs or failed logins.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import yaml

from harness import REPO, WIREPOOL, Wirepool, free_port, psql

DEPLOY = os.path.join(REPO, "deploy")


def run(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=120, **kw)


class SystemdTest(unittest.TestCase):

    def test_unit_verifies_and_is_hardened(self):
        with open(os.path.join(DEPLOY, "systemd", "wirepool.service")) as f:
            unit = f.read()
        for line in ("Type=notify", "ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes",
                     "ProtectSystem=strict", "StateDirectory=wirepool", "NoNewPrivileges=yes",
                     "CapabilityBoundingSet=\n", "AmbientCapabilities=\n", "LimitNOFILE=",
                     "SystemCallFilter=@system-service", "SystemCallFilter=~@privileged",
                     "ProtectProc=invisible", "ProcSubset=pid", "UMask=0077",
                     "StateDirectoryMode=0700"):
            self.assertIn(line, unit)
        with tempfile.TemporaryDirectory() as d:
            # verify refuses a unit whose binary does not exist: point it at the build.
            path = os.path.join(d, "wirepool.service")
            with open(path, "w") as f:
                f.write(unit.replace("/usr/bin/wirepool", os.path.abspath(WIREPOOL)))
            r = run("systemd-analyze", "verify", path)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertNotIn("wirepool.service:", r.stdout + r.stderr)

    def test_sd_notify_ready_reloading_stopping(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "notify")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(path)
            sock.settimeout(15)
            os.environ["NOTIFY_SOCKET"] = path
            try:
                wp = Wirepool(name="notify").start()
            finally:
                del os.environ["NOTIFY_SOCKET"]
            try:
                def next_message():
                    return sock.recv(4096).decode()

                ready = next_message()
                self.assertIn("READY=1", ready)
                self.assertIn("STATUS=serving 1 database(s)", ready)
                wp.proc.send_signal(signal.SIGHUP)
                self.assertIn("RELOADING=1", next_message())
                self.assertIn("READY=1", next_message())
                wp.proc.send_signal(signal.SIGTERM)
                self.assertIn("STOPPING=1", next_message())
                self.assertEqual(wp.proc.wait(20), 0)
            finally:
                sock.close()
                wp.cleanup()


def dockerfile_packages(stage):
    """The packages the Dockerfile's `stage` (0 build, 1 runtime) installs."""
    with open(os.path.join(DEPLOY, "docker", "Dockerfile")) as f:
        text = f.read()
    runs = re.findall(r"apt-get install -y --no-install-recommends \\\n(.*?)\\\n \&\&", text,
                      re.S)
    return set(runs[stage].replace("\\\n", " ").split())


class ContainerTest(unittest.TestCase):

    def test_runtime_stage_installs_every_library_the_binary_needs(self):
        r = run("readelf", "-d", WIREPOOL)
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", r.stdout)
        self.assertTrue(needed)
        # make test's second pass runs a sanitizer build; the image ships the release one.
        needed = [l for l in needed if not re.match(r"lib(a|ub|t|l)san\.", l)]
        runtime = dockerfile_packages(1)
        base = {"libc6", "libstdc++6", "libgcc-s1"}  # in debian:bookworm-slim itself
        for lib in needed:
            owner = run("dpkg", "-S", f"*/{lib}")
            self.assertEqual(owner.returncode, 0, f"{lib}: {owner.stderr}")
            packages = {l.split(":")[0] for l in owner.stdout.splitlines()}
            self.assertTrue(packages & (runtime | base),
                            f"{lib} comes from {packages}: add it to the Dockerfile's runtime stage")

    def test_build_stage_installs_the_makefile_build_packages(self):
        with open(os.path.join(REPO, "Makefile")) as f:
            text = f.read()
        m = re.search(r"^BUILD_PKGS := (.*?)\n(?!  )", text, re.S | re.M)
        build = set(m.group(1).replace("\\\n", " ").split()) - {"libgtest-dev", "libgmock-dev"}
        self.assertEqual(dockerfile_packages(0), build)

    def test_install_steps_then_healthcheck(self):
        with tempfile.TemporaryDirectory() as root:
            r = run(os.path.join(DEPLOY, "install.sh"), WIREPOOL, root)
            self.assertEqual(r.returncode, 0, r.stderr)
            binary = os.path.join(root, "usr", "bin", "wirepool")
            for p in ("usr/bin/wirepool", "lib/systemd/system/wirepool.service",
                      "usr/share/doc/wirepool/operations.md",
                      "usr/share/doc/wirepool/wirepool.example.yaml", "etc/wirepool",
                      "var/lib/wirepool"):
                self.assertTrue(os.path.exists(os.path.join(root, p)), p)
            self.assertRegex(run(binary, "--version").stdout, r"^wirepool \d")
            example = os.path.join(root, "usr", "share", "doc", "wirepool", "wirepool.example.yaml")
            r = run(binary, "--check-config", example)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(example) as f:
                check_safe_listeners(self, yaml.safe_load(f))
            self.assertNotIn("curl", dockerfile_packages(1))
            # Run it as the image would, on free ports and a scratch state directory.
            with open(example) as f:
                text = f.read()
            pg, http = free_port(), free_port()
            text = (text.replace("/var/lib/wirepool", os.path.join(root, "var", "lib", "wirepool"))
                    .replace("0.0.0.0, port: 6432", f"127.0.0.1, port: {pg}")
                    .replace("0.0.0.0, port: 9930", f"127.0.0.1, port: {http}"))
            config = os.path.join(root, "etc", "wirepool", "wirepool.yaml")
            with open(config, "w") as f:
                f.write(text)
            env = dict(os.environ, WIREPOOL_APP_PASSWORD="unused")
            proc = subprocess.Popen([binary, "--config", config], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env)
            try:
                deadline = time.time() + 15
                ok = False
                while time.time() < deadline and not ok:
                    ok = run(*healthcheck(http)).returncode == 0
                    time.sleep(0.1)
                self.assertTrue(ok)
                # It fails when nothing answers 200 there.
                self.assertNotEqual(run(*healthcheck(free_port())).returncode, 0)
            finally:
                proc.send_signal(signal.SIGTERM)
                out = proc.communicate(timeout=30)[0].decode(errors="replace")
            self.assertEqual(proc.returncode, 0, out[-2000:])
            for line in out.splitlines():
                json.loads(line)  # the example logs JSON lines


def check_safe_listeners(test, config):
    """A listener off loopback requires TLS (PostgreSQL) or has an allow-list
    (HTTP)."""
    for l in config["listeners"]:
        if l["address"].startswith("127."):
            continue
        if l["protocol"] == "postgres":
            test.assertEqual(l.get("tls"), "required", l)
        elif l["protocol"] == "http":
            test.assertTrue(l.get("allow"), l)
            test.assertNotIn("0.0.0.0/0", l["allow"])


def healthcheck(port):
    """The Dockerfile's HEALTHCHECK command (exec form) aimed at `port`."""
    with open(os.path.join(DEPLOY, "docker", "Dockerfile")) as f:
        m = re.search(r"^HEALTHCHECK .*?\bCMD (\[.*?\])$", f.read(), re.S | re.M)
    return [a.replace("/9930", f"/{port}") for a in json.loads(m.group(1))]


class KubernetesTest(unittest.TestCase):

    def load(self):
        docs = {}
        folder = os.path.join(DEPLOY, "kubernetes")
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name)) as f:
                for doc in yaml.safe_load_all(f):
                    docs[doc["kind"]] = doc
        return docs

    def test_manifests_hang_together(self):
        docs = self.load()
        self.assertEqual(set(docs), {"ConfigMap", "Deployment", "Service", "Secret",
                                     "PodDisruptionBudget", "ServiceMonitor"})
        config = yaml.safe_load(docs["ConfigMap"]["data"]["wirepool.yaml"])
        check_safe_listeners(self, config)
        http = [l for l in config["listeners"] if l["protocol"] == "http"][0]
        pod = docs["Deployment"]["spec"]["template"]["spec"]
        c = pod["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        self.assertEqual(ports["http"], http["port"])
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "http"})
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "http"})
        self.assertIn("requests", c["resources"])
        grace = int(config["server"]["shutdown_grace"].rstrip("s"))
        self.assertLess(grace + 3, pod["terminationGracePeriodSeconds"])  # + preStop sleep
        strategy = docs["Deployment"]["spec"]["strategy"]
        self.assertEqual(strategy["type"], "RollingUpdate")
        self.assertEqual(strategy["rollingUpdate"]["maxUnavailable"], 0)
        env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c["env"]}
        for d in config["databases"]:
            ref = env[d["password_env"]]
            self.assertEqual(ref["name"], docs["Secret"]["metadata"]["name"])
            self.assertIn(ref["key"], docs["Secret"]["stringData"])
        mount = [m for m in c["volumeMounts"] if m["name"] == "config"][0]
        self.assertEqual(mount["mountPath"], "/etc/wirepool")
        self.assertEqual(docs["ServiceMonitor"]["spec"]["endpoints"][0]["port"], "http")
        self.assertIn("http", [p["name"] for p in docs["Service"]["spec"]["ports"]])
        self.assertEqual(docs["Service"]["spec"]["selector"],
                         docs["Deployment"]["spec"]["selector"]["matchLabels"])
        self.assertEqual(docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
                         docs["Deployment"]["spec"]["selector"]["matchLabels"])
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(docs["ConfigMap"]["data"]["wirepool.yaml"])
        try:
            r = run(WIREPOOL, "--check-config", f.name)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            os.unlink(f.name)


class DashboardAndLogsTest(unittest.TestCase):

    def test_dashboard_queries_only_exported_metrics(self):
        with open(os.path.join(DEPLOY, "grafana", "wirepool.json")) as f:
            dash = json.load(f)
        exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
        used = set()
        for e in exprs:
            used |= set(re.findall(r"\b((?:wirepool|process)_[a-z_]+)", e))
        wp = Wirepool(name="dashboard", http=True).start()
        try:
            _, _, body = wp.http_get("/metrics")
        finally:
            wp.cleanup()
        exported = set()
        for line in body.splitlines():
            m = re.match(r"# TYPE (\S+) (\S+)", line)
            if m:
                exported.add(m.group(1))
                if m.group(2) == "histogram":
                    exported |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
        self.assertTrue(used)
        self.assertEqual(used - exported, set())

    def test_json_logs_never_show_a_password(self):
        secrets = ["ConnS3cret", "EnvS3cret", "UriS3cret", "WrongS3cret", "wonderland"]
        dead = free_port()
        os.environ["WP_TEST_BACKEND_PASSWORD"] = "EnvS3cret"
        try:
            wp = Wirepool(server="log: { level: debug, format: json }\n", http=True,
                          users="""
                            - { name: alice, password: wonderland }
                            - { name: ops, password: wonderland, admin: true }
                          """,
                          databases=f"""
                            - name: app
                              driver: sqlite
                              connection: app.db
                            - name: conn
                              driver: postgresql
                              connection: host=127.0.0.1 port={dead} user=u password=ConnS3cret dbname=d connect_timeout=2
                              pool: {{ min: 1, max: 1 }}
                            - name: env
                              driver: postgresql
                              connection: host=127.0.0.1 port={dead} user=u dbname=d
                              password_env: WP_TEST_BACKEND_PASSWORD
                              pool: {{ min: 1, max: 1 }}
                            - name: uri
                              driver: postgresql
                              connection: postgresql://u:UriS3cret@127.0.0.1:{dead}/d
                              pool: {{ min: 1, max: 1 }}
                          """, name="secrets").start()
        finally:
            del os.environ["WP_TEST_BACKEND_PASSWORD"]
        try:
            psql(wp.dsn(), "-c", "SELECT 1")
            psql(wp.dsn(password="WrongS3cret"), "-c", "SELECT 1", check=False)
            for db in ("conn", "env", "uri"):
                psql(wp.dsn(database=db), "-c", "SELECT 1", check=False)
            shown = ""
            for what in ("DATABASES", "SERVERS", "POOLS", "CONFIG"):
                shown += psql(wp.dsn("ops", "wonderland", "wirepool"), "-c",
                              f"SHOW {what}").stdout
            wp.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            _, _, metrics = wp.http_get("/metrics")
            time.sleep(0.5)
        finally:
            wp.stop()
            log = wp.log()
            wp.cleanup()
        self.assertIn("cannot open backend", log)  # the connection strings were logged...
        self.assertIn("password=***", log)           # ...redacted
        lines = [l for l in log.splitlines() if l.strip()]
        for line in lines:
            self.assertEqual(set(json.loads(line)), {"ts", "level", "thread", "msg"})
        for s in secrets:
            self.assertNotIn(s, log)
            self.assertNotIn(s, shown)
            self.assertNotIn(s, metrics)


if __name__ == "__main__":
    unittest.main()
