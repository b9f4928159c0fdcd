#!/usr/bin/env python3
"""Open-loop load during a connection ramp: does the ramp turn into a catch-up burst or latency?

Starts `barrage serve echo` (2 threads, CPU 0) on 127.0.0.1, then per rep runs each generator
binary (CPU 1) on each case, interleaved (A B A B ...), with --json, and reports per case and
binary the medians over reps of: p99 latency (from the intended send time), the highest
per-second sent count against the plan, the ramp (seconds until every connection was up, from
the result or, for binaries that do not report it, the first second with all connections open),
connections up at the end, and not-sent messages. Every process is started here and stopped by
its PID; every run is bounded by -d and a timeout.
"""
import argparse, json, os, statistics, subprocess, sys, time

CASES = {
    # name: (args, plan per second)
    "2000c-500cps-100ms": (["-c", "2000", "--connect-rate", "500", "--interval", "100ms"], 20000),
    "19000c-1s": (["-c", "19000", "--interval", "1s"], 19000),
}

ap = argparse.ArgumentParser()
ap.add_argument("binaries", nargs="+", help="NAME=PATH of each barrage binary to compare")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--dur", default="8s")
ap.add_argument("--cases", default=",".join(CASES))
ap.add_argument("--out", required=True)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
bins = [b.split("=", 1) for b in a.binaries]
server_bin = bins[-1][1]
port = 7391

srv = subprocess.Popen(
    ["taskset", "-c", "0", server_bin, "serve", "echo", "--listen", f"127.0.0.1:{port}",
     "--threads", "2", "--exit-after", "3600s"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
rows = {}
try:
    for rep in range(a.reps):
        for case in a.cases.split(","):
            args, plan = CASES[case]
            for name, path in bins:
                out = os.path.join(a.out, f"{case}-{name}-{rep}.json")
                cmd = ["taskset", "-c", "1", path, f"tcp://127.0.0.1:{port}", *args,
                       "-d", a.dur, "-q", "--no-tui", "--json", out]
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=120)
                r = json.load(open(out))
                s = r["summary"]
                ticks = [t for t in r["timeseries"] if t["phase"] == "measured"]
                conns = s["connections"]["target"]
                ramp = (s.get("ramp") or {}).get("all_ready_s")
                if ramp is None:
                    full = [t["t"] for t in ticks if t["open"] >= conns]
                    ramp = full[0] if full else None
                rows.setdefault((case, name), []).append({
                    "p99_ms": s["latency_us"]["p99"] / 1000,
                    "max_sent_vs_plan": max(t["sent"] for t in ticks) / plan,
                    "ramp_s": ramp,
                    "up_at_end": s["connections"]["open"],
                    "not_sent": s["exchanges"]["not_sent"],
                })
                time.sleep(2)  # let TIME_WAIT and the server settle between runs
finally:
    srv.terminate()
    srv.wait(timeout=10)

med = lambda xs: statistics.median(xs)


def ramp_cell(xs):
    done = [x for x in xs if x is not None]
    if not done:
        return f"never all up ({len(xs)} of {len(xs)})"
    cell = f"{med(done):.2f} s"
    return cell if len(done) == len(xs) else f"{cell} ({len(xs) - len(done)} of {len(xs)} never all up)"

print(f"| case | binary | p99 | most sent in a second / plan | ramp | up at end | not sent | reps |")
print("|---|---|---|---|---|---|---|---|")
for (case, name), rs in rows.items():
    print(f"| {case} | {name} | {med([x['p99_ms'] for x in rs]):.2f} ms "
          f"| {med([x['max_sent_vs_plan'] for x in rs]):.2f} | {ramp_cell([x['ramp_s'] for x in rs])} "
          f"| {med([x['up_at_end'] for x in rs]):.0f} | {med([x['not_sent'] for x in rs]):.0f} | {len(rs)} |")
