#!/usr/bin/python3
"""Regenerates docs/performance.md (and its charts in docs/performance/) from
the newest full or quick result in bench/results/ (or the file given).

Usage: bench/report.py [RESULT.json] [--out docs/performance.md]
Charts need gnuplot (Debian gnuplot-nox, installed by `make bench`); without it
the page is written with tables only.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, ".."))
MODES = ("simple", "extended", "prepared")
TARGETS = ("direct", "pgbouncer", "wirepool")


def newest_result():
    files = []
    for path in glob.glob(os.path.join(HERE, "results", "*.json")):
        with open(path) as f:
            doc = json.load(f)
        if doc.get("kind") in ("full", "quick"):
            files.append((doc["date"], doc.get("kind") == "full", path))
    if not files:
        raise SystemExit("no result in bench/results/: run make bench first")
    # The newest full run, else the newest quick one.
    full = [f for f in files if f[1]]
    return max(full or files)[2]


def newest_of(kind, doc_dir):
    """The newest bench/results/KIND-*.json (the names sort by date) as (its
    document, its file name, its path from doc_dir), or None when there is none."""
    files = sorted(glob.glob(os.path.join(HERE, "results", f"{kind}-*.json")))
    if not files:
        return None
    with open(files[-1]) as f:
        doc = json.load(f)
    return doc, os.path.basename(files[-1]), os.path.relpath(files[-1], doc_dir)


def med(entry, key):
    v = (entry or {}).get(key) or {}
    return v.get("median")


def fmt(x, digits=0, unit=""):
    if x is None:
        return "—"
    if digits == 0:
        return f"{x:,.0f}{unit}"
    return f"{x:,.{digits}f}{unit}"


def spread(entry, key):
    v = (entry or {}).get(key) or {}
    return f" (±{v['spread_pct'] / 2:.0f}%)" if v.get("spread_pct") is not None else ""


LABELS = {"direct": "direct", "pgbouncer": "PgBouncer 1.18", "pgbouncer-1.25": "PgBouncer 1.25",
          "odyssey": "Odyssey", "wirepool": "wirepool"}


def targets_of(w):
    """direct, the peers measured in this run, wirepool (older results: PgBouncer 1.18)."""
    return ["direct"] + w["summary"].get("peers", ["pgbouncer"]) + ["wirepool"]


def tps_cell(e):
    failed_runs = e.get("failed_runs") or 0
    if med(e, "tps") is None:
        return "failed"
    if failed_runs:
        # Reported, not dropped: the median is of the rounds that ran.
        ran = (e.get("tps") or {}).get("n", 0)
        return (f"{fmt(med(e, 'tps'))}{spread(e, 'tps')}, "
                f"**failed in {failed_runs} of {failed_runs + ran} rounds**")
    return fmt(med(e, "tps")) + spread(e, "tps")


def best_peer(m, peers):
    """The fastest peer of one mode's summary, (name, median TPS), or (None,
    None). A peer that failed in half its rounds or more does not count (as
    PgBouncer 1.18 under -M prepared, which it does not support in
    transaction mode: a lucky round is not its speed)."""
    def counts(e):
        ran = (e.get("tps") or {}).get("n", 0)
        return ran and (e.get("failed_runs") or 0) < ran
    best = max(((m[p]["tps"]["median"], p) for p in peers if counts(m.get(p, {}))),
               default=(None, None))
    return best[1], best[0]


def cpu_cell(entry):
    """CPU µs per transaction, the kernel's part in brackets where measured."""
    total = fmt(med(entry, "cpu_us_per_tx"), 1)
    kernel = med(entry, "cpu_kernel_us_per_tx")
    return f"{total} ({fmt(kernel, 1)})" if kernel is not None else total


def pooler_table(w):
    """Per mode: TPS of every target, wirepool over the best peer, p99 and CPU."""
    s = w["summary"]
    targets = targets_of(w)
    poolers = targets[1:]
    names = [LABELS.get(t, t) for t in targets]
    split = any(med(s[mode].get(t), "cpu_kernel_us_per_tx") is not None
                for mode in MODES for t in poolers)
    lines = ["| mode | " + " | ".join(f"{n} TPS" for n in names) +
             " | wirepool / best peer | p99 ms (" + " / ".join(names) + ") | "
             "CPU µs per transaction" + (", in brackets of it in the kernel" if split else "") +
             " (" + " / ".join(LABELS.get(t, t) for t in poolers) + ") |",
             "|---" * (len(targets) + 4) + "|"]
    for mode in MODES:
        m = s[mode]
        cells = [tps_cell(m.get(t, {})) for t in targets]
        if "peers" in s:
            best, tps = best_peer(m, s["peers"])
            r = (med(m.get("wirepool"), "tps") / tps) if best and med(m.get("wirepool"), "tps") else None
        else:  # older results: PgBouncer 1.18 alone
            best = "pgbouncer" if "wirepool/pgbouncer" in m else None
            r = m.get("wirepool/pgbouncer")
        ratio_cell = f"{fmt(r, 3)} ({LABELS.get(best, best)})" if best and r else "—"
        p99 = " / ".join(fmt(med(m.get(t), "p99_ms"), 2) for t in targets)
        cpu = " / ".join(cpu_cell(m.get(t)) for t in poolers)
        lines.append(f"| {mode} | {' | '.join(cells)} | {ratio_cell} | {p99} | {cpu} |")
    return "\n".join(lines)


def chart(out_svg, title, w):
    """A grouped bar chart of median TPS per mode and target (gnuplot)."""
    if not shutil.which("gnuplot"):
        return False
    targets = targets_of(w)
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "tps.dat")
        with open(data, "w") as f:
            f.write("mode " + " ".join(targets) + "\n")
            for mode in MODES:
                vals = [med(w["summary"][mode].get(t), "tps") or 0 for t in targets]
                f.write(f"{mode} " + " ".join(f"{v:.0f}" for v in vals) + "\n")
        series = ", ".join(
            (f"'{data}' using 2:xtic(1)" if i == 0 else f"'' using {i + 2}") +
            f" title '{LABELS.get(t, t)}'" for i, t in enumerate(targets))
        script = f"""
set terminal svg size 720,360 dynamic font 'sans,11'
set output '{out_svg}'
set title '{title}'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'transactions per second (median)'
set yrange [0:*]
set key top left
set grid ytics
plot {series}
"""
        r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        return r.returncode == 0


def threads_text(st):
    t = st.get("wirepool_threads")
    if t is None:
        return "`server.threads` at its default"
    return f"`server.threads: {t}`"


def crosscheck_section(c):
    """The harness against plain pgbench runs of the same poolers (bench/crosscheck.py)."""
    s = c["summary"]
    md = ["## Cross-check: the harness against a plain pgbench", "",
          f"`bench/crosscheck.py` in this run: {c['rounds']} alternating rounds of "
          f"{c['seconds']} s, {c['clients']} clients, `-M simple`; *plain* is "
          "`pgbench -n -S -c 32 -j 2 -T 8` as a user types it (trust for the peers, SCRAM "
          "for wirepool, which has no trust login), *harness* is the run of the tables above "
          "(SCRAM, `--log` of one transaction in ten for the latencies). Medians (± half the "
          "spread); pgbench's exit status 2 (a client aborted) counts as a failed run.", "",
          "| pooler | " + " | ".join(c["variants"]) + " | harness / plain |",
          "|---" * (len(c["variants"]) + 2) + "|"]
    for name, m in s.items():
        cells = [fmt((m.get(v) or {}).get("median")) + spread(m, v) if (m.get(v) or {}).get(
            "median") else "failed" for v in c["variants"]]
        md.append(f"| {LABELS.get(name, name)} | {' | '.join(cells)} | "
                  f"{fmt(m.get('harness/plain'), 3)} |")
    return md + [""]


def findings(doc):
    """A hand-run result's findings, a paragraph each (empty entries, which
    older results use as separators, are skipped)."""
    return [line for f in doc.get("findings", []) if f for line in (f, "")]


def storm_section(doc_dir):
    """The login storm rows, from the newest bench/results/login_storm-*.json
    (bench/login_storm.py runs gathered by hand: not part of `make bench`)."""
    newest = newest_of("login_storm", doc_dir)
    if not newest:
        return []
    doc, file_name, rel = newest
    baseline = doc.get("baseline", "the build before the login waiting room")
    has_baseline = any("baseline" in r for load in doc["loads"] for r in load["runs"])
    md = ["## Login storm: SCRAM clients connecting at once, one query each", "",
          f"`bench/login_storm.py` on commit `{doc['commit']}`, {doc['date']} "
          f"([`{file_name}`]({rel})), {doc['note']} Medians of "
          f"{doc['rounds']} runs (min–max)" +
          (f"; *baseline* is {baseline}" if has_baseline else "") + ". Logins per second: "
          "clients logged in / from the first connect to the last login. CPU µs per login "
          "from /proc/PID/stat (10 ms ticks: ±20 µs at 500 logins); *client*: the bench "
          "process, whose SCRAM (PBKDF2, 4,096 iterations) is most of a login's work; *listen "
          "drops*: connections the kernel dropped from the pooler's full listen queue in each "
          "run (each waits 1 s for its SYN retry).", "",
          "| clients | pooler | logged in / failed (each run) | login p50 ms | login p99 ms | "
          "logins per second | CPU µs per login (pooler / client) | listen drops (each run) |",
          "|---|---|---|---|---|---|---|---|"]

    def stat(runs, key, digits=1):
        v = sorted(r[key] for r in runs if key in r)
        if not v:
            return "—"
        return f"{fmt(v[len(v) // 2], digits)} ({fmt(v[0], digits)}–{fmt(v[-1], digits)})"

    for load in doc["loads"]:
        for name in ("wirepool", "baseline", "pgbouncer-1.25"):
            runs = [r[name] for r in load["runs"] if name in r]
            if not runs:
                continue
            ok = "/".join(str(r["ok"]) for r in runs)
            bad = "/".join(str(r["failed"]) for r in runs)
            drops = "/".join(str(r["listen_overflows"]) for r in runs
                             if "listen_overflows" in r) or "—"
            md.append(f"| {load['clients']:,} ({load['spread']}) | {LABELS.get(name, name)} | "
                      f"{ok} / {bad} | {stat(runs, 'login_p50_ms')} | "
                      f"{stat(runs, 'login_p99_ms')} | {stat(runs, 'logins_per_s', 0)} | "
                      f"{stat(runs, 'cpu_us_per_login', 0)} / "
                      f"{stat(runs, 'client_cpu_us_per_login', 0)} | {drops} |")
    md.append("")
    return md + findings(doc)


def variants_table(r, names, label):
    """Rows of a side-by-side run of bench/pgbench_poolers.py (its result `r`):
    per mode, each target's TPS median (min–max), p99 median and CPU µs per
    transaction median, for `names` headed by `label`."""
    md = ["| mode | " + " | ".join(f"{label[n]} TPS" for n in names) + " | p99 ms (" +
          " / ".join(label[n] for n in names) + ") | CPU µs per transaction (" +
          " / ".join(label[n] for n in names) + ") |",
          "|---|" + "---|" * (len(names) + 2)]
    for mode in ("simple", "extended", "prepared"):
        cells, p99, cpu = [], [], []
        for n in names:
            e = r["summary"][mode].get(n, {})
            cells.append(f"{fmt(e.get('tps_median'))} ({fmt(e.get('tps_min'))}–"
                         f"{fmt(e.get('tps_max'))})")
            spread = (f" ({fmt(e['p99_ms_min'], 2)}–{fmt(e['p99_ms_max'], 2)})"
                      if "p99_ms_min" in e else "")
            p99.append(fmt(e.get("p99_ms_median"), 2) + spread)
            xs = [x["cpu_s"] * 1e6 / (x["tps"] * r["seconds"]) for x in r["samples"]
                  if x["mode"] == mode and x["target"] == n and not x["failed"] and x["tps"]
                  and "cpu_s" in x]
            cpu.append(fmt(sorted(xs)[len(xs) // 2], 1) if xs else "—")
        md.append(f"| {mode} | {' | '.join(cells)} | {' / '.join(p99)} | {' / '.join(cpu)} |")
    return md


def threads_section(doc_dir):
    """`server.threads` side by side, from the newest bench/results/threads-*.json
    (bench/pgbench_poolers.py --wirepool-threads 1,2,0, run by hand)."""
    newest = newest_of("threads", doc_dir)
    if not newest:
        return []
    doc, file_name, rel = newest
    r = doc["result"]
    names = [f"wirepool-t{t}" for t in str(r["wirepool_threads"]).split(",")]
    label = {n: ("default (`threads: 0`)" if n.endswith("-t0") else f"`threads: {n[10:]}`")
             for n in names}
    md = ["## Event loops: `server.threads` at 32 clients", "",
          f"`bench/pgbench_poolers.py --wirepool-threads {r['wirepool_threads']}` on commit "
          f"`{doc['commit']}`, {doc['date']} ([`{file_name}`]({rel})), "
          f"{doc['note']} {r['rounds']} alternating rounds of {r['seconds']} s, "
          f"{r['clients']} clients, pool {r['pool']}; TPS medians (min–max), p99 and wirepool's "
          "CPU µs per transaction medians.", ""]
    md += variants_table(r, names, label) + [""]
    return md + findings(doc)


def pipeline_max_section(doc_dir):
    """`pool.pipeline_max` side by side with the peers, from the newest
    bench/results/pipeline_max-*.json: one or more runs (`results`) of
    bench/pgbench_poolers.py --pipeline-max ... --peers, run by hand."""
    newest = newest_of("pipeline_max", doc_dir)
    if not newest:
        return []
    doc, file_name, rel = newest
    label = {"direct": "direct", "pgbouncer": "PgB 1.18", "pgbouncer-1.25": "PgB 1.25",
             "odyssey": "Odyssey"}
    md = ["## Connections for trains: `pool.pipeline_max`", "",
          f"On commit `{doc['commit']}`, {doc['date']} ([`{file_name}`]({rel})), {doc['note']} "
          "TPS medians (min–max), p99 medians (min–max) and CPU µs per transaction medians "
          "(direct: none).", ""]
    for r in doc["results"]:
        targets = list(r["summary"]["simple"])
        names = [n for n in ("direct", "pgbouncer", "pgbouncer-1.25", "odyssey") if n in targets]
        mine = [f"wirepool-pm{v}" for v in r["pipeline_max"].split(",")
                if f"wirepool-pm{v}" in targets]
        label.update({n: ("wirepool default" if n.endswith("-pm0") else
                          "wirepool `pipeline: false`" if n.endswith("-pmoff") else
                          f"wirepool `pipeline_max: {n[11:]}`") for n in mine})
        md += [f"{r['clients']} clients: `bench/pgbench_poolers.py --pipeline-max "
               f"{r['pipeline_max']} --peers`, {r['rounds']} alternating rounds of "
               f"{r['seconds']} s, pool {r['pool']}.", ""]
        md += variants_table(r, names + mine, label) + [""]
    return md + findings(doc)


def rewrite_section(doc_dir):
    """The rewrite layer's cost on the plain path (issue 32), from the newest
    bench/results/rewrite_cost-*.json: callgrind counts by
    bench/relay_instructions.py and timed bench/pgbench_sqlite.py rounds,
    gathered by hand (not part of `make bench`)."""
    newest = newest_of("rewrite_cost", doc_dir)
    if not newest:
        return []
    doc, file_name, rel = newest
    names = doc["binaries"]
    md = ["## The rewrite layer on the plain path (SQLite)", "",
          f"On commit `{doc['commit']}`, {doc['date']} ([`{file_name}`]({rel})). "
          f"{doc['note']}", "",
          f"| script, mode | {names['e6']} | {names['base']} | {names['new']} | "
          "rewrite layer before | rewrite layer after |", "|---|---|---|---|---|---|"]
    for r in doc["counts"]:
        def share(layer, total):
            return f"{layer:,} ({100.0 * layer / total:.2f} %)" if layer is not None else "—"
        md.append(f"| {r['script']}, `-M {r['mode']}` | {r['e6']:,} | {r['base']:,} | "
                  f"{r['new']:,} | {share(r.get('layer_base'), r['base'])} | "
                  f"{share(r.get('layer_new'), r['new'])} |")
    t = doc.get("timing")
    if t:
        md += ["", t["note"], "",
               f"| script, mode | {names['e6']} TPS | {names['new']} TPS | ratio (medians) |",
               "|---|---|---|---|"]
        for r in t["rows"]:
            a, b = sorted(r["e6"]), sorted(r["new"])
            ma, mb = a[len(a) // 2], b[len(b) // 2]
            md.append(f"| {r['script']}, `-M {r['mode']}` | {fmt(ma)} ({fmt(a[0])}–{fmt(a[-1])}) | "
                      f"{fmt(mb)} ({fmt(b[0])}–{fmt(b[-1])}) | {mb / ma:.3f} |")
    return md + [""]


def memory_section():
    """Where an idle client's bytes go: bench/results/idle_memory.md, an
    accounting made by hand (sizeof and a malloc count; not part of `make bench`)."""
    path = os.path.join(HERE, "results", "idle_memory.md")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().rstrip("\n").split("\n") + [""]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("result", nargs="?")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "performance.md"))
    a = ap.parse_args()
    path = a.result or newest_result()
    with open(path) as f:
        doc = json.load(f)
    w = doc["workloads"]
    out_dir = os.path.join(os.path.dirname(os.path.abspath(a.out)), "performance")
    os.makedirs(out_dir, exist_ok=True)
    rel = os.path.relpath(path, os.path.dirname(os.path.abspath(a.out)))
    st = doc["settings"]
    md = [
        "# Performance",
        "",
        "Generated by `bench/report.py` from "
        f"[`{os.path.basename(path)}`]({rel}) — do not edit by hand; rerun "
        "`make bench` (or `make bench QUICK=1`).",
        "",
        f"- run: **{doc['kind']}**, {doc['date']}, commit `{doc['commit']}`, "
        f"{doc['machine']['cpus']} CPUs (shared and noisy: only ratios within one run mean "
        "anything), {:.0f} minutes".format(doc["elapsed_s"] / 60),
        "- " + ", ".join(v for k, v in doc["versions"].items()),
        f"- {st['rounds']} counted rounds per cell after an uncounted warm-up, the targets "
        f"alternating within each round; {st['seconds']} s per pgbench run; pool size "
        f"{st['pool']} for every pooler (transaction mode), SCRAM-SHA-256 logins; wirepool with "
        f"{threads_text(st)}, with its defaults otherwise (the relay's pipelining "
        f"{'on' if st.get('wirepool_pipeline') else 'off'}: docs/protocol-postgres.md); PgBouncer "
        "1.25 with `max_prepared_statements = 200`, Odyssey (one worker) with "
        "`pool_reserve_prepared_statement` for `-M prepared`: each peer in its best mode; the "
        f"order of the targets turns by one each round; pgbench scale {st['scale']}, one "
        "transaction in ten logged for the latencies. Medians, with ± half the spread (max − "
        "min) of the rounds; CPU from /proc/PID/stat over each run.",
        "",
        "Targets held against (issue 30): TPS ≥ 1.25× the best peer in each mode (`-M "
        "prepared` against the peers' own `-M prepared`); p99 ≤ the best peer's; CPU per "
        "transaction ≤ 0.75× PgBouncer 1.25's; bytes per idle client ≤ PgBouncer 1.18's; RSS "
        "back within 20% of its start once the idle clients leave; streaming ≥ 0.8× direct "
        "with flat RSS; every driver ≥ 95% of its raw C program. A missed target is reported, "
        "not tuned away.",
        "",
    ]
    failed = {k: v for k, v in w.items() if v.get("failed") and "summary" not in v}
    for k in failed:
        del w[k]
    if "poolers" in w:
        p = w["poolers"]
        md += ["## 1. Pooler throughput: `pgbench -S`, 32 clients, 2 threads", "",
               pooler_table(p), ""]
        if chart(os.path.join(out_dir, "poolers.svg"), "pgbench -S, 32 clients", p):
            md += ["![pgbench -S, 32 clients](performance/poolers.svg)", ""]
    if "many" in w:
        p = w["many"]
        md += [f"## 2. Many clients: the same with {p['clients']} clients", ""]
        if p.get("rounds") != st["rounds"] or p.get("seconds") != st["seconds"]:
            md += [f"{p.get('rounds')} counted rounds, {p.get('seconds')} s per pgbench run "
                   "(500 SCRAM logins need seconds of their own).", ""]
        md += [
               pooler_table(p), ""]
        if chart(os.path.join(out_dir, "many.svg"), f"pgbench -S, {p['clients']} clients", p):
            md += [f"![pgbench -S, {p['clients']} clients](performance/many.svg)", ""]
    if "idle" in w:
        i = w["idle"]
        s = i["summary"]
        names = [t for t in s if "/" not in t]
        md += [f"## 3. Idle clients: RSS per idle authenticated client ({i['clients']:,} clients, "
               "SCRAM-SHA-256)", "",
               "Each round a fresh process of each pooler; RSS before the clients log in, with "
               "them idle, and 3 s after they have left.", "",
               "| pooler | bytes per idle client | logins per second (one at a time) | "
               "RSS KiB before / idle / after they left | after / before |",
               "|---|---|---|---|---|"]
        for t in names:
            rss = " / ".join(fmt(med(s[t], k)) for k in ("rss_before_kib", "rss_after_kib",
                                                           "rss_left_kib"))
            md.append(f"| {LABELS.get(t, t)} | {fmt(med(s[t], 'bytes_per_client'))}"
                      f"{spread(s[t], 'bytes_per_client')} | {fmt(med(s[t], 'logins_per_s'))} | "
                      f"{rss} | {fmt(med(s[t], 'left_over_start'), 2)} |")
        md += ["", "wirepool's bytes per idle client / the peer's: " + ", ".join(
            f"{LABELS.get(k.split('/')[1], k)} **{fmt(v, 3)}**" for k, v in s.items()
            if "/" in k), ""]
    if "streaming" in w:
        x = w["streaming"]
        s = x["summary"]
        md += [f"## 4. Streaming: a {x['rows']:,}-row, 3-column SELECT read by psql", "",
               "| target | rows per second | wirepool RSS growth during the query |",
               "|---|---|---|",
               f"| direct | {fmt(med(s['direct'], 'rows_per_s'))}"
               f"{spread(s['direct'], 'rows_per_s')} | |",
               f"| wirepool | {fmt(med(s['wirepool'], 'rows_per_s'))}"
               f"{spread(s['wirepool'], 'rows_per_s')} | "
               f"{fmt(med(s['wirepool'], 'rss_growth_kib'))} KiB (median of the peaks) |",
               "", f"wirepool/direct: **{fmt(s.get('wirepool/direct'), 3)}**", ""]
    if "drivers" in w:
        d = w["drivers"]
        md += ["## 5. Drivers vs the raw C API", ""]
        if d.get("skipped") or d.get("failed"):
            md += [f"Not measured in this run: {d.get('skipped') or d.get('error', '')[:300]}",
                   ""]
        else:
            md += ["Each cell: the driver through wirepool's contract as a percentage of the C "
                   "program doing the same work on the raw C API (`bench/c/`); 100% = as fast. "
                   f"Each cell is the median over {d.get('rounds', '?')} rounds of the round's "
                   "driver/C ratio (the two programs run back to back in each round, the C "
                   "program first in every other round)"
                   + (f"; both programs pinned to CPU {d['pinned']['client_cpu']} and a "
                      f"server to CPU {d['pinned']['server_cpu']}" if d.get("pinned") else "")
                   + "; in each run the scan "
                   "is read 5 times and its median kept; both read each insert's affected row "
                   "count, as the front end must for the command tag. The in-process backends (sqlite, "
                   "SQLite ODBC) take 5× the rows (N) and 4× the lookups of the others: their "
                   "phases are too short to time otherwise.",
                   "", "Batch: the N rows again as parameter arrays of 1000 (ODBC only; — where a "
                   "run did not measure it).",
                   "", "| driver | N | insert | scan | lookup | batch |",
                   "|---|---|---|---|---|---|"]
            for row in d.get("table", []):
                batch = fmt(row.get('batch_pct'), 0, '%') if "batch_pct" in row else "—"
                md.append(f"| {row['driver']} | {fmt(row.get('n'))} | "
                          f"{fmt(row.get('insert_pct'), 0, '%')} | "
                          f"{fmt(row.get('scan_pct'), 0, '%')} | "
                          f"{fmt(row.get('lookup_pct'), 0, '%')} | {batch} |")
            md.append("")
    if "embedded" in w:
        e = w["embedded"]["summary"]
        md += ["## 6. Embedded default: pgbench, a primary-key SELECT over SQLite, 32 clients",
               "", "| mode | TPS | mean latency ms |", "|---|---|---|"]
        for mode in ("simple", "prepared"):
            md.append(f"| {mode} | {fmt(med(e[mode], 'tps'))}{spread(e[mode], 'tps')} | "
                      f"{fmt(med(e[mode], 'latency_ms'), 2)} |")
        md.append("")
    if "crosscheck" in w:
        md += crosscheck_section(w["crosscheck"])
    md += storm_section(os.path.dirname(os.path.abspath(a.out)))
    md += threads_section(os.path.dirname(os.path.abspath(a.out)))
    md += pipeline_max_section(os.path.dirname(os.path.abspath(a.out)))
    md += rewrite_section(os.path.dirname(os.path.abspath(a.out)))
    md += memory_section()
    if failed:
        md += ["## Workloads that failed in this run", ""]
        for k, v in failed.items():
            md.append(f"- `{k}`: {v.get('error', '')[:400]}")
        md.append("")
    md += ["## Reproducing", "",
           "```sh",
           "make bench QUICK=1   # under 10 minutes",
           "make bench           # the full run, under 45 minutes",
           "```", "",
           "Every sample is in the JSON file; `bench/run.py --only poolers,idle` runs a subset.",
           "To hold a change against the commit before it, in the same rounds: "
           "`bench/pgbench_poolers.py --baseline OLD/wirepool --only wirepool,baseline`.",
           ""]
    with open(a.out, "w") as f:
        f.write("\n".join(md))
    print(a.out)


if __name__ == "__main__":
    main()
