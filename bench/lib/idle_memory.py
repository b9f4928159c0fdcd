#!/usr/bin/env python3
"""Generator memory per open, mostly idle connection.

Starts `barrage serve echo` (1 thread, CPU 0) on 127.0.0.1, then per rep runs the generator
(1 thread, CPU 1) with the baseline connection count and with the large count, each connection
sending one small message every --interval (mostly idle). While the run is in progress, once
per second: generator VmRSS / RssAnon, the generator's open socket count (/proc/PID/fd), and the
server's VmRSS. Only samples taken once every connection is up count. Per connection =
(median RSS at N - median RSS at BASE) / (N - BASE), per rep; the report gives every rep and the
median. Every process is started here and stopped by its PID; every run is bounded.
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--barrage", required=True)
ap.add_argument("--conns", type=int, default=10000)
ap.add_argument("--base", type=int, default=10)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--interval", default="10s")
ap.add_argument("--dur", type=int, default=15, help="seconds of load per run")
ap.add_argument("--out", required=True)
a = ap.parse_args()
os.makedirs(a.out, exist_ok=True)


def status(pid):
    d = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
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


def stop(p, sig=signal.SIGINT):
    """Stop a process we started, by its PID; SIGKILL if it does not exit within 10 s."""
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# total bound for the server: every run plus slack; it also stops by itself (--exit-after)
budget = a.reps * 2 * (a.dur + 40) + 30
srv_log = open(os.path.join(a.out, "server.log"), "w+")
srv = subprocess.Popen(["taskset", "-c", "0", a.barrage, "serve", "echo", "--listen", "127.0.0.1:0",
                        "--threads", "1", "--exit-after", f"{budget}s"],
                       stdout=srv_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
results = []
try:
    port = None
    for _ in range(100):
        srv_log.seek(0)
        m = re.search(r"127\.0\.0\.1:(\d+)", srv_log.read())
        if m:
            port = int(m.group(1))
            break
        if srv.poll() is not None:
            sys.exit("echo server exited early: " + open(srv_log.name).read())
        time.sleep(0.1)
    if not port:
        sys.exit("echo server did not print its port")
    print(f"[idle] echo server pid {srv.pid} on 127.0.0.1:{port}", file=sys.stderr)

    for rep in range(1, a.reps + 1):
        for n in (a.base, a.conns):
            rd = os.path.join(a.out, f"rep{rep}-c{n}")
            os.makedirs(rd, exist_ok=True)
            jf = os.path.join(rd, "barrage.json")
            cmd = ["taskset", "-c", "1", a.barrage, f"tcp://127.0.0.1:{port}", "-c", str(n),
                   "--interval", a.interval, "-d", f"{a.dur}s", "-t", "1", "-q", "--json", jf]
            with open(os.path.join(rd, "cmd.txt"), "w") as f:
                f.write(" ".join(cmd) + "\n")
            t0 = time.time()
            g = subprocess.Popen(cmd, stdout=open(os.path.join(rd, "stdout.txt"), "w"),
                                 stderr=open(os.path.join(rd, "stderr.txt"), "w"), stdin=subprocess.DEVNULL)
            samples, up_at, timed_out = [], None, False
            while g.poll() is None:
                el = time.time() - t0
                if el > a.dur + 40:  # hard bound: the run should have ended long ago
                    timed_out = True
                    stop(g)
                    break
                st, socks, sst = status(g.pid), sockets(g.pid), status(srv.pid)
                if socks >= n and up_at is None:
                    up_at = el
                samples.append(dict(t=round(el, 2), sockets=socks, rss_kb=st.get("VmRSS"), anon_kb=st.get("RssAnon"),
                                    server_rss_kb=sst.get("VmRSS"), up=socks >= n))
                time.sleep(1.0)
            rc = g.wait()
            # connections up: the whole set open; drop the very first "up" sample (buffers still settling)
            upc = [s for s in samples if s["up"] and s["rss_kb"]][1:]
            res = {}
            try:
                d = json.load(open(jf))
                s = d["summary"]
                res = dict(status=d.get("status"), requests=s["requests"], errors=s["errors"].get("total"),
                           peak_open=s.get("connections", {}).get("peak"))
            except Exception as e:  # keep going, report it
                res = dict(status=f"no result ({e!r})")
            r = dict(rep=rep, conns=n, rc=rc, timed_out=timed_out, up_after_s=None if up_at is None else round(up_at, 1), n_up_samples=len(upc),
                     rss_med_kb=statistics.median([s["rss_kb"] for s in upc]) if upc else None,
                     rss_max_kb=max([s["rss_kb"] for s in upc]) if upc else None,
                     anon_med_kb=statistics.median([s["anon_kb"] for s in upc if s["anon_kb"] is not None]) if upc else None,
                     server_rss_med_kb=statistics.median([s["server_rss_kb"] for s in upc if s["server_rss_kb"]]) if upc else None,
                     **res)
            with open(os.path.join(rd, "samples.json"), "w") as f:
                json.dump(samples, f)
            results.append(r)
            print(f"[idle] rep{rep} c={n}: " + json.dumps(r), file=sys.stderr, flush=True)
            time.sleep(2)  # let the server close the previous set
finally:
    stop(srv)

with open(os.path.join(a.out, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


def kb(x):
    return "–" if x is None else f"{x:,.0f}"


print(f"| rep | conns | gen VmRSS median KiB (max) | gen RssAnon median KiB | server VmRSS median KiB | up after s | samples | requests | errors | peak open | status |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in results:
    print(f"| {r['rep']} | {r['conns']} | {kb(r['rss_med_kb'])} ({kb(r['rss_max_kb'])}) | {kb(r['anon_med_kb'])} | "
          f"{kb(r['server_rss_med_kb'])} | {r['up_after_s'] if r['up_after_s'] is not None else 'never'} | {r['n_up_samples']} | "
          f"{r.get('requests', '–')} | {r.get('errors', '–')} | {r.get('peak_open', '–')} | {r.get('status')}{' TIMEOUT' if r['timed_out'] else ''} |")
print()
per, per_anon, per_srv = [], [], []
for rep in range(1, a.reps + 1):
    b = next((r for r in results if r["rep"] == rep and r["conns"] == a.base), None)
    t = next((r for r in results if r["rep"] == rep and r["conns"] == a.conns), None)
    if b and t and b["rss_med_kb"] and t["rss_med_kb"]:
        dn = a.conns - a.base
        per.append((rep, (t["rss_med_kb"] - b["rss_med_kb"]) * 1024 / dn))
        per_anon.append((t["anon_med_kb"] - b["anon_med_kb"]) * 1024 / dn)
        per_srv.append((t["server_rss_med_kb"] - b["server_rss_med_kb"]) * 1024 / dn)
print(f"| figure | per rep | median | target |")
print("|---|---|---|---|")
if per:
    m = statistics.median(x for _, x in per)
    print(f"| generator (VmRSS@{a.conns} − VmRSS@{a.base}) / {a.conns - a.base}, bytes/conn | "
          f"{', '.join(f'{x:,.0f}' for _, x in per)} | **{m:,.0f}** | ≤ 2,048 → {'met' if m <= 2048 else 'MISSED'} |")
    print(f"| generator RssAnon difference, bytes/conn | {', '.join(f'{x:,.0f}' for x in per_anon)} | "
          f"{statistics.median(per_anon):,.0f} | |")
    print(f"| echo server VmRSS difference, bytes/conn (information; the server keeps its memory between runs, "
          f"so only rep 1 is a clean difference) | {', '.join(f'{x:,.0f}' for x in per_srv)} | rep 1: {per_srv[0]:,.0f} | |")
    srv_n = [r["server_rss_med_kb"] for r in results if r["conns"] == a.conns and r["server_rss_med_kb"]]
    print(f"| echo server VmRSS while holding {a.conns} conns, KiB | {', '.join(f'{x:,.0f}' for x in srv_n)} | "
          f"{statistics.median(srv_n):,.0f} | |")
else:
    print("| generator bytes/conn | – | – | no complete pair of runs |")
print()
print("VmRSS counts user-space memory only; the kernel's socket buffers are not in it.")
