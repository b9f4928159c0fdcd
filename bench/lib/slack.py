#!/usr/bin/env python3
"""Open-loop timer slack (issue 10): generator CPU per message and latency at 20,000 msg/s over
1,000 connections (`--interval 50ms`, one thread) against `barrage serve echo --threads 1`
(CPU 0; generator on CPU 1), for each --timer-slack W, interleaved reps (W1 W2 W3 W1 ...).
CPU per message = generator user+sys CPU time / completed messages; p50/p99 from the result
(timed from the W-aligned intended send time). A binary named `before` runs without
--timer-slack (its schedule is exact). Every process is started here and stopped by its PID;
every run is bounded by -d and a timeout.
"""
import argparse, json, os, statistics, subprocess, time

ap = argparse.ArgumentParser()
ap.add_argument("binaries", nargs="+", help="NAME=PATH of each barrage binary")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--dur", default="10s")
ap.add_argument("--slacks", default="0,100us,1ms")
ap.add_argument("--out", required=True)
ap.add_argument("--floor", help="the open_loop_floor example: the kernel's floor at each W, "
                "run beside barrage (same pinning, same server, interleaved)")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
bins = [b.split("=", 1) for b in a.binaries]
server_bin = bins[-1][1]
port = 7392

runs = []
for name, path in bins:
    if name == "before":
        runs.append((name, path, None))
    else:
        runs += [(name, path, w) for w in a.slacks.split(",")]
if a.floor:
    runs += [("floor", a.floor, w) for w in a.slacks.split(",")]

srv = subprocess.Popen(
    ["taskset", "-c", "0", server_bin, "serve", "echo", "--listen", f"127.0.0.1:{port}",
     "--threads", "1", "--exit-after", "3600s"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
rows = {}
try:
    for rep in range(a.reps):
        for name, path, w in runs:
            label = f"{name} W={w}" if w is not None else f"{name} (exact)"
            out = os.path.join(a.out, f"{label.replace(' ', '_')}-{rep}.json")
            if name == "floor":
                wd = "0us" if w == "0" else w
                p = subprocess.run(["taskset", "-c", "1", path, f"127.0.0.1:{port}", "1000",
                                    "50ms", wd, a.dur], capture_output=True, text=True,
                                   timeout=120, check=True)
                open(out, "w").write(p.stdout)
                f = json.loads(p.stdout)
                dur_s = (float(a.dur[:-2]) / 1000 if a.dur.endswith("ms")
                         else float(a.dur.rstrip("s")))
                rows.setdefault(label, []).append({
                    "cpu_us": f["cpu_us_per_message"], "p50": float("nan"),
                    "p99": float("nan"), "rps": f["messages"] / dur_s,
                    "not_sent": f["messages"] - f["replies"],
                })
                time.sleep(2)
                continue
            times = out + ".time"
            cmd = ["taskset", "-c", "1", "/usr/bin/time", "-f", "%U %S", "-o", times, path,
                   f"tcp://127.0.0.1:{port}", "-c", "1000", "-t", "1", "--interval", "50ms",
                   "-d", a.dur, "-q", "--no-tui", "--json", out]
            if w is not None:
                cmd += ["--timer-slack", w]
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            u, s = map(float, open(times).read().split()[-2:])
            r = json.load(open(out))["summary"]
            done = r["exchanges"]["completed"]
            rows.setdefault(label, []).append({
                "cpu_us": (u + s) * 1e6 / max(done, 1),
                "p50": r["latency_us"]["p50"], "p99": r["latency_us"]["p99"],
                "rps": r["rps"]["avg"], "not_sent": r["exchanges"]["not_sent"],
            })
            time.sleep(2)
finally:
    srv.terminate()
    srv.wait(timeout=10)

med = statistics.median
print("| generator | CPU µs / message | p50 | p99 | msg/s | not sent (floor: not answered) | reps |")
print("|---|---|---|---|---|---|---|")
for label, rs in rows.items():
    lat = lambda k: "—" if label.startswith("floor") else f"{med([x[k] for x in rs]):.0f} µs"
    print(f"| {label} | {med([x['cpu_us'] for x in rs]):.2f} | {lat('p50')} "
          f"| {lat('p99')} | {med([x['rps'] for x in rs]):,.0f} "
          f"| {med([x['not_sent'] for x in rs]):.0f} | {len(rs)} |")
