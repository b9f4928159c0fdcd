#!/usr/bin/env python3
"""Time to connect N idle connections with no pacing, and their memory (bench/connect.sh).

Every run (a tool, a rep) is made in a network namespace of its own (`unshare --net`, loopback
only): a fresh port range, no TIME_WAIT sockets left by the run before, so each tool starts
from the same state. Inside it: `barrage serve echo --threads 1` (as many processes as the
20,000-file limit per process needs for N), then the tool with N connections and no pacing.
The namespace's established TCP connections are read from /proc/net/snmp (CurrEstab: both
ends of a loopback connection are in the namespace, so connections = CurrEstab / 2) every
10 ms. Figures per run: the time from the tool's start to all N established, the time from
the first established connection to all N (without process start-up and barrage's common
start of --processes), and the tool's RSS (every process of its tree) 2 s after all N were up,
per connection. The tool is then stopped (SIGTERM, by PID), and the server.

More than one process is needed above ~19,000 connections (open files): barrage runs
`--processes auto --source-ip auto`; tcpkali runs as K processes of N/K connections each,
each from its own source address (`--source-ip 127.0.0.I`, as barrage's sources), -w 1 each.

    connect.py --barrage BIN [--tcpkali BIN] [--conns 19000,100000] [--reps 3] [--out DIR]
"""
import argparse, json, math, os, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proctree  # noqa: E402  (the /proc reader, shared)

PER_PROCESS = 18000


def established():
    with open("/proc/net/snmp") as f:
        rows = [l.split() for l in f if l.startswith("Tcp:")]
    head, vals = rows[0], rows[1]
    return int(vals[head.index("CurrEstab")]) // 2


def tree_rss(roots):
    """RSS in bytes of the processes `roots` and all their descendants."""
    table = proctree.procs()
    total = 0
    for pid, (_, _, rss) in table.items():
        p = pid
        while p > 1:
            if p in roots:
                total += rss
                break
            p = table.get(p, (0,))[0]
    return total


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def inner(a):
    """One run, inside its namespace; prints one JSON line."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    n, port = a.conns_one, 17000
    k = max(1, math.ceil(n / PER_PROCESS))
    log = open(os.path.join(a.out, f"{a.tool}-{n}.log"), "a")
    server = subprocess.Popen(
        [a.barrage, "serve", "echo", "--listen", f"127.0.0.1:{port}", "--threads", "1",
         "--processes", str(k), "--exit-after", "150s"],
        stdout=log, stderr=subprocess.STDOUT)
    time.sleep(0.5)
    if a.tool == "barrage":
        cmd = [a.barrage, f"tcp://127.0.0.1:{port}", "-c", str(n), "--think", "60s", "-d", "60s",
               "-q", "--no-tui"]
        cmd += ["--processes", "auto", "--source-ip", "auto"] if k > 1 else ["-t", "2"]
        cmds = [cmd]
    else:
        per = math.ceil(n / k)
        cmds = [[a.tcpkali, "-c", str(min(per, n - i * per)), "--connect-rate", "1000000",
                 "-w", "1" if k > 1 else "2", "-T", "60s", "--source-ip", f"127.0.0.{i + 1}",
                 f"127.0.0.1:{port}"] for i in range(k)]
    t0 = time.monotonic()
    procs = [subprocess.Popen(c, stdout=log, stderr=subprocess.STDOUT) for c in cmds]
    first = took = None
    peak = 0
    while time.monotonic() - t0 < 90:
        c = established()
        now = time.monotonic() - t0
        peak = max(peak, c)
        if c > 0 and first is None:
            first = now
        if c >= n:
            took = now
            break
        if all(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    rss = None
    if took is not None:
        time.sleep(2)
        rss = tree_rss({p.pid for p in procs})
    stop(procs)
    stop([server])
    print(json.dumps({"took": took, "first": first, "peak": peak, "rss": rss}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--barrage", required=True)
    ap.add_argument("--tcpkali")
    ap.add_argument("--conns", default="19000,100000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="/tmp/barrage-bench/connect")
    ap.add_argument("--inner", metavar="TOOL", dest="tool")
    ap.add_argument("--conns-one", type=int)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.tool:
        return inner(a)
    tools = ["barrage"] + (["tcpkali"] if a.tcpkali else [])
    sizes = [int(x) for x in a.conns.split(",")]
    results = {(t, n): [] for t in tools for n in sizes}
    for n in sizes:
        for rep in range(a.reps):
            # Alternate which tool goes first.
            for t in (tools if rep % 2 == 0 else tools[::-1]):
                argv = [sys.executable, os.path.abspath(__file__), "--inner", t, "--conns-one", str(n),
                        "--barrage", a.barrage, "--out", a.out]
                if a.tcpkali:
                    argv += ["--tcpkali", a.tcpkali]
                done = subprocess.run(["unshare", "--net", "--"] + argv, capture_output=True, text=True,
                                      timeout=300)
                try:
                    r = json.loads(done.stdout.strip().splitlines()[-1])
                except (IndexError, ValueError):
                    raise SystemExit(f"{t} at {n}: the run failed: {done.stderr.strip()}")
                results[(t, n)].append(r)
                if r["took"] is None:
                    print(f"{n:,} rep {rep + 1} {t}: only {r['peak']:,} established", flush=True)
                else:
                    print(f"{n:,} rep {rep + 1} {t}: all up {r['took']:.3f} s after start, "
                          f"{r['took'] - r['first']:.3f} s after the first; "
                          f"RSS {r['rss'] / n:.0f} B per connection", flush=True)
    print()
    print("| connections | tool | from start to all up (median) | from the first to all up | "
          "RSS per connection | reps (from start, s) |")
    print("|---|---|---|---|---|---|")
    for (t, n), rs in results.items():
        ok = [r for r in rs if r["took"] is not None]
        if len(ok) < len(rs):
            med = f"{len(rs) - len(ok)} of {len(rs)} did not open them all"
            reps = ", ".join("-" if r["took"] is None else "%.3f" % r["took"] for r in rs)
            print(f"| {n:,} | {t} | {med} | | | {reps} |")
            continue
        start = statistics.median(r["took"] for r in ok)
        spread = statistics.median(r["took"] - r["first"] for r in ok)
        rss = statistics.median(r["rss"] for r in ok) / n
        reps = ", ".join("%.3f" % r["took"] for r in ok)
        print(f"| {n:,} | {t} | {start:.3f} s | {spread:.3f} s | {rss:,.0f} B | {reps} |")


if __name__ == "__main__":
    main()
