#!/usr/bin/env python3
"""Generator CPU per delivery with and without stamps, and its RSS over time (issue 11).

Each run: `unshare --net` (loopback only, fresh ports), `serve chat --threads 1 --stats` on
CPU 0, `barrage run bench/scenarios/rooms-<variant>.toml` with -t 1 on CPU 1. The generator's
/proc/PID/stat (utime + stime) and VmRSS are sampled every second. CPU per delivery = the
generator's CPU over the run / the deliveries the server wrote (its --stats); the "stamps"
variant also reports what barrage counted (delivered + duplicates, which must equal it).
RSS slope: least squares over the samples from (last arrival + 10 s) to the end of the hold.
Every process is started here and stopped by PID; every run is bounded.
"""
import argparse, json, os, signal, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--barrage", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--users", type=int, default=2000)
ap.add_argument("--arrive", type=float, default=500.0)
ap.add_argument("--hold", type=float, default=30.0, help="seconds after the last arrival")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--variants", default="stamps,plain")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
TICKS = os.sysconf("SC_CLK_TCK")

SCRIPT = r"""
set -u
ip link set lo up || exit 97
taskset -c 0 "$B" serve chat --listen 127.0.0.1:7100 --threads 1 --stats "$RD/chat.json" --exit-after "$BUDGET" >"$RD/server.log" 2>&1 &
s=$!
for _ in $(seq 100); do grep -q listening "$RD/server.log" && break; sleep 0.05; done
taskset -c 1 "$B" run "$SC" --users "$U" --arrive "$AR" --hold "${HOLD}s" -t 1 -q --no-tui --json "$RD/run.json" >"$RD/stdout.txt" 2>"$RD/stderr.txt" &
g=$!
echo "$g $s" >"$RD/pids"
wait "$g"; rc=$?
kill -TERM "$s" 2>/dev/null; wait "$s"
exit "$rc"
"""


def proc(pid):
    try:
        st = open(f"/proc/{pid}/stat").read()
        f = st[st.rfind(")") + 2:].split()
        cpu = (int(f[11]) + int(f[12])) / TICKS
        rss = 0
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        return cpu, rss
    except (OSError, ValueError, IndexError):
        return None


def run(variant, rep):
    rd = os.path.join(a.out, f"{variant}-{rep}")
    os.makedirs(rd, exist_ok=True)
    last = (a.users - 1) / a.arrive
    total = last + a.hold
    env = dict(os.environ, B=a.barrage, RD=rd, SC=os.path.join(here, "..", "scenarios", f"rooms-{variant}.toml"),
               U=str(a.users), AR=str(a.arrive), HOLD=str(a.hold), BUDGET=f"{int(total + 60)}s")
    t0 = time.time()
    w = subprocess.Popen(["unshare", "--net", "--", "bash", "-c", SCRIPT], env=env, stdin=subprocess.DEVNULL)
    gpid, samples = None, []
    while w.poll() is None:
        if time.time() - t0 > total + 90:
            os.kill(w.pid, signal.SIGKILL)
            break
        if gpid is None:
            try:
                gpid = int(open(os.path.join(rd, "pids")).read().split()[0])
            except (OSError, ValueError, IndexError):
                time.sleep(0.02)
                continue
        p = proc(gpid)
        if p:
            samples.append((time.time() - t0, p[0], p[1]))
        time.sleep(1.0)
    rc = w.wait()
    r = dict(variant=variant, rep=rep, rc=rc)
    try:
        v = json.load(open(os.path.join(rd, "run.json")))
        chat = json.load(open(os.path.join(rd, "chat.json")))["chat"]
        b = v["summary"].get("broadcast") or {}
        r.update(deliveries=chat["deliveries_out"], messages=chat["messages_in"],
                 counted=(b.get("delivered", 0) + b.get("duplicates", 0)) if b else None,
                 reach=b.get("reach"), p99_us=(b.get("peer_us") or {}).get("p99"))
    except Exception as e:
        r["error"] = repr(e)
        return r
    if len(samples) >= 2:
        cpu = samples[-1][1] - samples[0][1]
        span = samples[-1][0] - samples[0][0]
        r["cpu_s"] = cpu
        r["cores"] = cpu / span if span > 0 else None
        r["us_per_delivery"] = cpu * 1e6 / r["deliveries"] if r["deliveries"] else None
        steady = [(t, rss) for t, _, rss in samples if t >= last + 10 and t <= total]
        if len(steady) >= 5:
            mx = statistics.mean(t for t, _ in steady)
            my = statistics.mean(x for _, x in steady)
            sxx = sum((t - mx) ** 2 for t, _ in steady)
            r["rss_kib_first"], r["rss_kib_last"] = steady[0][1], steady[-1][1]
            r["rss_slope_kib_per_min"] = (sum((t - mx) * (x - my) for t, x in steady) / sxx * 60) if sxx else 0
        # CPU over the steady part only (the ramp and the departure excluded).
        st = [s for s in samples if last + 10 <= s[0] <= total]
        if len(st) >= 2 and st[-1][0] > st[0][0]:
            r["steady_cores"] = (st[-1][1] - st[0][1]) / (st[-1][0] - st[0][0])
    json.dump(samples, open(os.path.join(rd, "samples.json"), "w"))
    return r


results = []
variants = a.variants.split(",")
for rep in range(a.reps):
    order = variants[rep % len(variants):] + variants[:rep % len(variants)]
    for v in order:
        r = run(v, rep)
        print("[broadcast] " + json.dumps(r), file=sys.stderr, flush=True)
        results.append(r)
json.dump(results, open(os.path.join(a.out, "results.json"), "w"), indent=1)

def f(x, nd=2):
    return "–" if x is None else f"{x:,.{nd}f}"

print(f"{a.users} users arriving at {a.arrive}/s, hold {a.hold} s, one message per 4 s each, rooms 3-8 (serve chat, 1 thread); "
      f"generator -t 1; {a.reps} reps, variants interleaved")
print()
print("| variant | rep | deliveries (server) | counted by barrage | reach | p99 to others | generator CPU s | cores (steady) | µs CPU / delivery | RSS KiB first→last | RSS slope KiB/min |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in results:
    print(f"| {r['variant']} | {r['rep']} | {r.get('deliveries', '–'):,} | {r.get('counted') if r.get('counted') is not None else '–'} | "
          f"{f((r.get('reach') or 0) * 100, 2) + ' %' if r.get('reach') else '–'} | {(str(r['p99_us']) + ' µs') if r.get('p99_us') is not None else '–'} | {f(r.get('cpu_s'))} | "
          f"{f(r.get('steady_cores'), 3)} | {f(r.get('us_per_delivery'))} | {r.get('rss_kib_first', '–')}→{r.get('rss_kib_last', '–')} | "
          f"{f(r.get('rss_slope_kib_per_min'), 1)} |")
print()
med = {v: statistics.median([r["us_per_delivery"] for r in results if r["variant"] == v and r.get("us_per_delivery")] or [float("nan")])
       for v in variants}
for v in variants:
    print(f"- {v}: median {f(med[v])} µs of generator CPU per delivery")
if "stamps" in med and "plain" in med:
    print(f"- scanning and accounting: {f(med['stamps'] - med['plain'])} µs per delivery (stamps − plain; target ≤ 1 µs)")
