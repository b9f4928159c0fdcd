#!/usr/bin/env python3
"""Socket vs WebSocket: barrage against its own `serve echo` (raw TCP) and `serve ws` (WebSocket
echo), same message, same connection count, echo ping-pong (one message in flight per connection).

Both servers are started once (1 thread each, pinned to CPU 0, port 0, address read from their
output) and stay up; per rep the generator (1 thread, pinned to CPU 1) runs once against each,
order rotating per rep (tcp ws, ws tcp, ...), after a discarded warm-up run of each. Measured per
run: msg/s and latency from barrage.json, generator CPU (wait4 rusage, whole run), server CPU
(/proc/PID/stat delta), other CPU (both cores' busy time minus the two). Ratios are medians of
per-rep ratios. Every process is started here, bounded in time, and stopped by its PID.
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--barrage", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--conns", type=int, default=100)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--dur", type=int, default=10, help="seconds of load per run")
ap.add_argument("--msg-bytes", type=int, default=32, help="message size ('x' * N, as the k6 ws scenario)")
ap.add_argument("--warmup", type=int, default=2, help="seconds of discarded warm-up per transport (0: none)")
ap.add_argument("--order", choices=["rotate", "fixed"], default="rotate")
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)
CLK = os.sysconf("SC_CLK_TCK")
MSG = "x" * a.msg_bytes


def cpu_ticks(pid):
    try:
        s = open(f"/proc/{pid}/stat").read()
        f = s[s.rfind(")") + 2:].split()
        return int(f[11]) + int(f[12])  # utime + stime, all threads
    except (OSError, IndexError, ValueError):
        return 0


def cpu_stat():
    out = {}
    for line in open("/proc/stat"):
        if line.startswith("cpu"):
            p = line.split()
            out[p[0]] = [int(x) for x in p[1:]]
    return out


def busy_s(s0, s1, key):
    if key not in s0 or key not in s1:
        return 0.0
    d = [y - x for x, y in zip(s0[key], s1[key])]
    return (sum(d[:8]) - d[3] - d[4]) / CLK


def stop(p, sig=signal.SIGINT, wait=10):
    """Stop a process we started, by its PID; SIGKILL if it is still there after `wait` s."""
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def has_flag(sub, flag):
    r = subprocess.run([a.barrage, "serve", sub, "--help"], capture_output=True, text=True, timeout=10)
    return flag in r.stdout


def start_server(sub, budget_s):
    log = open(os.path.join(a.out, f"serve-{sub}.log"), "w+")
    argv = ["taskset", "-c", "0", a.barrage, "serve", sub, "--listen", "127.0.0.1:0", "--threads", "1"]
    if has_flag(sub, "--exit-after"):  # a second bound, should this script die without stopping it
        argv += ["--exit-after", f"{budget_s}s"]
    p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for _ in range(150):
        log.seek(0)
        m = re.search(r"127\.0\.0\.1:(\d+)", log.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.1)
    stop(p)
    log.seek(0)
    sys.exit(f"`barrage serve {sub}` did not print its address: {log.read()[-500:]}")


def run(kind, url, rd, dur, srv):
    os.makedirs(rd, exist_ok=True)
    jf = os.path.join(rd, "barrage.json")
    cmd = ["taskset", "-c", "1", a.barrage, url, "-m", MSG, "-c", str(a.conns), "-t", "1",
           "-d", f"{dur}s", "-q", "--json", jf]
    with open(os.path.join(rd, "cmd.txt"), "w") as f:
        f.write(" ".join(cmd) + "\n")
    s0, c0, t0 = cpu_stat(), cpu_ticks(srv.pid), time.time()
    g = subprocess.Popen(cmd, stdout=open(os.path.join(rd, "stdout.txt"), "w"),
                         stderr=open(os.path.join(rd, "stderr.txt"), "w"), stdin=subprocess.DEVNULL)
    ru, timed_out = None, False
    while True:
        pid, status, ru = os.wait4(g.pid, os.WNOHANG)
        if pid:
            g.returncode = os.waitstatus_to_exitcode(status)
            break
        if time.time() - t0 > dur + 30:  # hard bound: barrage should have stopped by itself
            timed_out = True
            g.send_signal(signal.SIGINT)
            for _ in range(100):
                pid, status, ru = os.wait4(g.pid, os.WNOHANG)
                if pid:
                    break
                time.sleep(0.1)
            if not pid:
                g.kill()
                _, status, ru = os.wait4(g.pid, 0)
            g.returncode = -1
            break
        time.sleep(0.05)
    wall = time.time() - t0
    s1, c1 = cpu_stat(), cpu_ticks(srv.pid)
    gen_cpu = ru.ru_utime + ru.ru_stime
    srv_cpu = (c1 - c0) / CLK
    rec = dict(kind=kind, url=url, rc=g.returncode, timed_out=timed_out, wall_s=wall, gen_cpu_s=gen_cpu,
               server_cpu_s=srv_cpu,
               other_cpu_pct=100.0 * (busy_s(s0, s1, "cpu0") + busy_s(s0, s1, "cpu1") - gen_cpu - srv_cpu) / wall)
    try:
        d = json.load(open(jf))
        s = d["summary"]
        rec.update(status=d.get("status"), msgs=s["requests"], rps=s["rps"]["avg"],
                   p50_ms=s["latency_us"]["p50"] / 1000, p99_ms=s["latency_us"]["p99"] / 1000,
                   errors=s["errors"].get("total"), bytes_written=s.get("io", {}).get("bytes_written"))
        if rec["msgs"]:
            rec["gen_us_per_msg"] = gen_cpu * 1e6 / rec["msgs"]
            rec["srv_us_per_msg"] = srv_cpu * 1e6 / rec["msgs"]
    except Exception as e:  # keep going, report it
        rec["error"] = repr(e)[:200]
    return rec


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=2):
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{nd}f}"


budget = (a.reps * 2 + 2) * (a.dur + 35) + 60
servers = {}
recs = []
try:
    for kind, sub in (("tcp", "echo"), ("ws", "ws")):
        servers[kind] = start_server(sub, budget)
        print(f"[ws-vs-tcp] serve {sub}: pid {servers[kind][0].pid} on 127.0.0.1:{servers[kind][1]}", file=sys.stderr)
    urls = {"tcp": f"tcp://127.0.0.1:{servers['tcp'][1]}", "ws": f"ws://127.0.0.1:{servers['ws'][1]}/"}
    kinds = ["tcp", "ws"]
    if a.warmup > 0:
        for k in kinds:
            w = run(k, urls[k], os.path.join(a.out, "warmup", k), a.warmup, servers[k][0])
            print(f"[ws-vs-tcp] warm-up {k}: rc={w['rc']} rps={f(w.get('rps'))} {w.get('error', '')}", file=sys.stderr)
    for rep in range(1, a.reps + 1):
        order = kinds[(rep - 1) % 2:] + kinds[:(rep - 1) % 2] if a.order == "rotate" else kinds
        for k in order:
            r = run(k, urls[k], os.path.join(a.out, f"rep{rep}", k), a.dur, servers[k][0])
            r["rep"] = rep
            recs.append(r)
            with open(os.path.join(a.out, "runs.jsonl"), "a") as fh:
                fh.write(json.dumps(r) + "\n")
            print(f"[ws-vs-tcp] rep{rep} {k}: rc={r['rc']} status={r.get('status')} msg/s={f(r.get('rps'))} "
                  f"gen µs/msg={f(r.get('gen_us_per_msg'))} srv µs/msg={f(r.get('srv_us_per_msg'))} "
                  f"p50={f(r.get('p50_ms'), 3)} p99={f(r.get('p99_ms'), 3)} err={r.get('errors')} "
                  f"other={f(r.get('other_cpu_pct'), 0)}%{' TIMEOUT' if r['timed_out'] else ''} {r.get('error', '')}",
                  file=sys.stderr)
            time.sleep(1)
finally:
    for p, _ in servers.values():
        stop(p)


def good(r):
    return r.get("rps") and r["rc"] == 0 and not r["timed_out"]


print(f"{a.conns} connections, {a.msg_bytes}-byte message ('x' x {a.msg_bytes}), echo ping-pong; "
      f"{a.reps} reps x {a.dur} s, interleaved ({a.order}); server (1 thread) on CPU 0, barrage -t 1 on CPU 1")
print()
print("| transport | server | reps ok | msg/s median (min–max) | gen CPU µs/msg | server CPU µs/msg | p50 ms | p99 ms "
      "| gen CPU % | server CPU % | other CPU % | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for k, sub in (("tcp", "serve echo"), ("ws", "serve ws")):
    mine = [r for r in recs if r["kind"] == k]
    ok = [r for r in mine if good(r)]
    rps = [r["rps"] for r in ok]
    notes = [f"rep{r['rep']}: rc {r['rc']} {r.get('status') or r.get('error', '')}" for r in mine if not good(r)]
    notes += [f"rep{r['rep']}: status {r['status']}" for r in ok if r.get("status") != "completed"]
    print("| " + " | ".join([
        k, f"`barrage {sub}`", f"{len(ok)}/{len(mine)}",
        f"{f(med(rps))} ({f(min(rps))}–{f(max(rps))})" if rps else "failed",
        f(med([r.get("gen_us_per_msg") for r in ok])), f(med([r.get("srv_us_per_msg") for r in ok])),
        f(med([r.get("p50_ms") for r in ok]), 3), f(med([r.get("p99_ms") for r in ok]), 3),
        f(med([100 * r["gen_cpu_s"] / r["wall_s"] for r in ok]), 0),
        f(med([100 * r["server_cpu_s"] / r["wall_s"] for r in ok]), 0),
        f(med([r.get("other_cpu_pct") for r in ok]), 0),
        f(med([r.get("errors") for r in mine]), 0) + (" (" + "; ".join(notes) + ")" if notes else "")]) + " |")

by = {(r["rep"], r["kind"]): r for r in recs if good(r)}
pairs = [(by[(rep, "tcp")], by[(rep, "ws")]) for rep in range(1, a.reps + 1) if (rep, "tcp") in by and (rep, "ws") in by]
thr = [t["rps"] / w["rps"] for t, w in pairs]
gcpu = [w["gen_us_per_msg"] / t["gen_us_per_msg"] for t, w in pairs if t.get("gen_us_per_msg") and w.get("gen_us_per_msg")]
scpu = [w["srv_us_per_msg"] / t["srv_us_per_msg"] for t, w in pairs if t.get("srv_us_per_msg") and w.get("srv_us_per_msg")]
print()
print("| ratio (median of per-rep ratios) | median | per rep |")
print("|---|---|---|")
print(f"| throughput socket ÷ WebSocket (tcp msg/s ÷ ws msg/s) | **{f(med(thr))}** | {', '.join(f(x) for x in thr)} |")
print(f"| generator CPU µs/msg WebSocket ÷ socket | {f(med(gcpu))} | {', '.join(f(x) for x in gcpu)} |")
print(f"| server CPU µs/msg WebSocket ÷ socket | {f(med(scpu))} | {', '.join(f(x) for x in scpu)} |")
