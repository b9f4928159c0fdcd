#!/usr/bin/env python3
"""Idle memory per connection, BEFORE and AFTER builds side by side (issue 9 target: ≤ 400 B for
raw TCP, ≤ 600 B for WebSocket at 10,000 connections; issue 28: ≤ 2 KiB for HTTP/2, `h2`).

Every run gets its own network namespace (`unshare --net`, loopback only): a fresh port range
without the TIME_WAIT sockets of earlier runs or of other users of the machine (10,000 closed
connections leave 10,000 local ports in TIME_WAIT for 60 s; the next runs then fail with
local_port_exhausted). In it, `serve echo` or `serve ws` (1 thread, CPU 0, from the first build)
and the generator (-t 1, CPU 1) run as separate processes; every connection sends one small
message every --interval (so it stays idle); connections open at --connect-rate. The
generator's /proc/PID/status (VmRSS, RssAnon) and socket count (/proc/PID/fd) are sampled every
--every s until 1 % of the connections are open, then every 0.25 s.

Per rep, transport and build (builds in rotating order), two runs: --base connections, then --conns.
  full      = median of the samples taken once every connection is up: at least --conns sockets
              and later than the run's own `summary.ramp.all_ready_s` (its JSON) + 1 s;
  two runs  = (full VmRSS at --conns − full VmRSS at --base) / (conns − base): everything a
              connection costs, including what the worker allocates up front for every planned
              connection (the connection table is sized at start);
  same run  = (full VmRSS − VmRSS at ~0 connections, the last sample with at most 1 % of them
              open) / (conns − sockets then): only what a connection adds once it is opened; the
              up-front table is already in the "~0" sample, so this is a lower bound.
Also the least-squares slope of VmRSS against open sockets over the ramp (≈ the same-run figure).
Every process is started here and stopped by its PID; every run is bounded (-d, --exit-after, a timeout).
"""
import argparse, json, os, signal, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("builds", nargs="+", help="NAME=PATH of each barrage build (the first also serves)")
ap.add_argument("--conns", type=int, default=10000)
ap.add_argument("--base", type=int, default=10, help="connections of the baseline run")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--interval", default="10s")
ap.add_argument("--connect-rate", type=int, default=2500, help="connections opened per second")
ap.add_argument("--dur", type=int, default=12, help="seconds of the big run (-d), ramp included")
ap.add_argument("--base-dur", type=int, default=5, help="seconds of the baseline run (-d)")
ap.add_argument("--every", type=float, default=0.02, help="sampling period until 1 %% are open, s")
ap.add_argument("--transports", default="tcp,ws")
ap.add_argument("--out", required=True)
ap.add_argument("--tcp-max", type=float, default=400.0, help="target, bytes/conn")
ap.add_argument("--ws-max", type=float, default=600.0, help="target, bytes/conn")
ap.add_argument("--users-max", type=float, default=1024.0, help="target, bytes/user")
ap.add_argument("--h2-max", type=float, default=2048.0, help="target, bytes/conn (issue 28)")
ap.add_argument("--scenario", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "idle-users.toml"),
                help="the scenario of the `users` transport (its target must be tcp://127.0.0.1:7000)")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
builds = [b.split("=", 1) for b in a.builds]
transports = a.transports.split(",")
server_bin = builds[0][1]
PORT = 7000  # inside the run's own network namespace: always free

# Runs inside `unshare --net`: loopback up, server on CPU 0, generator on CPU 1, both stopped by PID.
NETNS_SCRIPT = r"""
set -u
ip link set lo up || { echo "cannot bring lo up in the new network namespace" >&2; exit 97; }
taskset -c 0 "$SRV" serve "$SUB" --listen 127.0.0.1:$PORT --threads 1 --exit-after "$BUDGET" >"$RD/server.log" 2>&1 &
s=$!
for _ in $(seq 100); do grep -q "listening" "$RD/server.log" && break; sleep 0.05; done
taskset -c 1 "$@" >"$RD/stdout.txt" 2>"$RD/stderr.txt" &
g=$!
echo "$g $s" >"$RD/pids"
wait "$g"; rc=$?
kill -INT "$s" 2>/dev/null; wait "$s"
exit "$rc"
"""


def status(pid):
    d = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon"):
                    d[k] = int(v.split()[0])
    except OSError:
        pass
    return d


def sockets(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                    n += 1
            except OSError:
                pass
    except OSError:
        pass
    return n


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                s = open(f"/proc/{d}/stat").read()
                if int(s[s.rfind(")") + 2:].split()[1]) == pid:
                    kids.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return kids


def kill_tree(pid, sig):
    """Signal pid and each of its descendants by its own PID (all started by this script)."""
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        seen.append(p)
        todo += children(p)
    for p in seen:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def run_one(name, binary, kind, n, rd):
    os.makedirs(rd, exist_ok=True)
    dur = a.base_dur if n == a.base else a.dur
    jf = os.path.join(rd, "barrage.json")
    url = {"tcp": f"tcp://127.0.0.1:{PORT}", "h2": f"h2c://127.0.0.1:{PORT}/"}.get(
        kind, f"ws://127.0.0.1:{PORT}/")
    gen = [binary, url, "-c", str(n), "--connect-rate", str(a.connect_rate), "--interval", a.interval,
           "-d", f"{dur}s", "-t", "1", "-q", "--no-tui", "--json", jf]
    if kind == "users":
        # Users arrive at --connect-rate, run the scenario's steps, then hold until -d's end.
        hold = max(1.0, dur - n / a.connect_rate)
        gen = [binary, "run", os.path.abspath(a.scenario), "--users", str(n), "--arrive", str(a.connect_rate),
               "--hold", f"{hold:.2f}s", "-t", "1", "-q", "--no-tui", "--json", jf]
    with open(os.path.join(rd, "cmd.txt"), "w") as f:
        f.write("unshare --net; " + " ".join(gen) + "\n")
    env = dict(os.environ, SRV=server_bin, SUB={"ws": "ws", "h2": "h2"}.get(kind, "echo"), PORT=str(PORT),
               BUDGET=f"{dur + 60}s", RD=rd)
    t0 = time.time()
    w = subprocess.Popen(["unshare", "--net", "--", "bash", "-c", NETNS_SCRIPT, "netns-run", *gen],
                         env=env, stdin=subprocess.DEVNULL)
    gpid, samples, timed_out = None, [], False
    while w.poll() is None:
        el = time.time() - t0
        if el > dur + 40:
            timed_out = True
            kill_tree(w.pid, signal.SIGINT)
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                kill_tree(w.pid, signal.SIGKILL)
            break
        if gpid is None:
            try:
                gpid = int(open(os.path.join(rd, "pids")).read().split()[0])
            except (OSError, ValueError, IndexError):
                time.sleep(0.005)
                continue
        st, socks = status(gpid), sockets(gpid)
        if st.get("VmRSS"):
            samples.append((round(el, 3), socks, st["VmRSS"], st.get("RssAnon")))
        time.sleep(a.every if socks <= n // 100 else 0.25)
    rc = w.wait()
    with open(os.path.join(rd, "samples.json"), "w") as f:
        json.dump(samples, f)
    r = dict(build=name, transport=kind, conns=n, rc=rc, timed_out=timed_out, samples=len(samples))
    try:
        d = json.load(open(jf))
        s = d["summary"]
        r.update(status=d.get("status"), all_ready_s=(s.get("ramp") or {}).get("all_ready_s"),
                 requests=s["requests"], errors=s["errors"].get("total"), peak_open=s["connections"]["peak"])
    except Exception as e:  # keep going, report it
        r.update(status=f"no result ({e!r})", all_ready_s=None)
    ready = r["all_ready_s"]
    full = [x for x in samples if x[1] >= n and ready is not None and x[0] >= ready + 1.0]
    if full:
        r["full_rss_kb"] = statistics.median(x[2] for x in full)
        r["full_anon_kb"] = statistics.median(x[3] for x in full)
        r["full_samples"] = len(full)
    lowc = [x for x in samples if 0 < x[1] <= n // 100]
    if lowc and full and n >= 1000:
        base = lowc[-1]
        r["zero_socks"], r["zero_rss_kb"] = base[1], base[2]
        r["same_run_b"] = (r["full_rss_kb"] - base[2]) * 1024 / (n - base[1])
    ramp = [x for x in samples if 0 < x[1] < n]
    if len(ramp) >= 10 and n >= 1000:
        mx = statistics.mean(x[1] for x in ramp)
        my = statistics.mean(x[2] for x in ramp)
        sxx = sum((x[1] - mx) ** 2 for x in ramp)
        if sxx:
            r["ramp_slope_b"] = sum((x[1] - mx) * (x[2] - my) for x in ramp) / sxx * 1024
    return r


results = []
for rep in range(1, a.reps + 1):
    k = (rep - 1) % len(builds)
    order = builds[k:] + builds[:k]  # rep k starts with build k: none always runs first
    for kind in transports:
        for name, binary in order:
            pair = {}
            for n in (a.base, a.conns):
                r = run_one(name, binary, kind, n, os.path.join(a.out, f"rep{rep}", kind, name, f"c{n}"))
                r["rep"] = rep
                pair[n] = r
                print("[idle-mem] " + json.dumps(r), file=sys.stderr, flush=True)
            big, small = pair[a.conns], pair[a.base]
            if big.get("full_rss_kb") and small.get("full_rss_kb"):
                big["base_rss_kb"] = small["full_rss_kb"]
                big["two_runs_b"] = (big["full_rss_kb"] - small["full_rss_kb"]) * 1024 / (a.conns - a.base)
                big["two_runs_anon_b"] = (big["full_anon_kb"] - small["full_anon_kb"]) * 1024 / (a.conns - a.base)
            results += [small, big]

with open(os.path.join(a.out, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


def fmt(x, nd=0):
    return "–" if x is None else f"{x:,.{nd}f}"


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


print(f"{a.conns} vs {a.base} connections, one message each per {a.interval}, opened at {a.connect_rate}/s, "
      f"-d {a.dur}s (baseline runs {a.base_dur}s); {a.reps} reps, builds interleaved (rotating order); each run in its own network namespace")
print()
print(f"| transport | build | rep | VmRSS KiB @{a.base} | VmRSS KiB @~0 of the big run (sockets) | VmRSS KiB @{a.conns} (samples) "
      f"| B/conn two runs | B/conn RssAnon two runs | B/conn same run | ramp slope B/conn | all ready s | requests | errors | status |")
print("|" + "---|" * 14)
for r in results:
    if r["conns"] != a.conns:
        continue
    sm = next(x for x in results if x["rep"] == r["rep"] and x["transport"] == r["transport"]
              and x["build"] == r["build"] and x["conns"] == a.base)
    st = f"{r.get('status')}{' TIMEOUT' if r['timed_out'] else ''}"
    if sm.get("status") != "completed" or sm.get("errors"):
        st += f" (base run: {sm.get('status')}, {sm.get('errors')} errors)"
    print(f"| {r['transport']} | {r['build']} | {r['rep']} | {fmt(sm.get('full_rss_kb'))} | "
          f"{fmt(r.get('zero_rss_kb'))} ({r.get('zero_socks', '–')}) | {fmt(r.get('full_rss_kb'))} ({r.get('full_samples', 0)}) | "
          f"{fmt(r.get('two_runs_b'))} | {fmt(r.get('two_runs_anon_b'))} | {fmt(r.get('same_run_b'))} | "
          f"{fmt(r.get('ramp_slope_b'))} | {fmt(r.get('all_ready_s'), 2)} | {r.get('requests', '–')} | "
          f"{r.get('errors', '–')} | {st} |")
print()
print("| transport | build | B/conn two runs, median (per rep) | target | B/conn same run, median (per rep) | ramp slope median |")
print("|---|---|---|---|---|---|")
for kind in transports:
    tmax = {"tcp": a.tcp_max, "ws": a.ws_max, "h2": a.h2_max}.get(kind, a.users_max)
    for name, _ in builds:
        rs = [r for r in results if r["transport"] == kind and r["build"] == name and r["conns"] == a.conns]
        two, same = med([r.get("two_runs_b") for r in rs]), med([r.get("same_run_b") for r in rs])
        verdict = "–" if two is None else ("met" if two <= tmax else "MISSED")
        print(f"| {kind} | {name} | **{fmt(two)}** ({', '.join(fmt(r.get('two_runs_b')) for r in rs)}) | "
              f"≤ {tmax:,.0f} B → {verdict} | {fmt(same)} ({', '.join(fmt(r.get('same_run_b')) for r in rs)}) | "
              f"{fmt(med([r.get('ramp_slope_b') for r in rs]))} |")
print()
print("VmRSS counts user-space memory only; the kernel's socket buffers are not in it. \"two runs\" is the")
print("figure of the earlier bench/idle-memory.sh (383 B before the codecs): it includes the connection table the")
print("worker allocates up front; \"same run\" does not (that table is already in the ~0 sample).")
