#!/usr/bin/env python3
"""What the live outputs cost, as generator CPU time for a fixed amount of work
(bench/outputs.sh --fixed; issue 12's 3 % target).

The same barrage binary, plain and with every live output on (--prometheus and --web on ports
of their own, --out, --csv, --hdr-log), does the same -n requests against nginx (HTTP/1.1
keep-alive GET, 100 connections; the shared harness's nginx.conf.tmpl, one worker on CPU 0)
and redis-server (inline PING, 50 connections, CPU 0), barrage -t 1 on CPU 1. The figure is
barrage's own CPU time (user + system of the process, from wait4) divided by the requests it
completed: no rate, no duration, so a server that is slower in one run changes nothing but the
wall time. Reps interleaved (plain, outputs / outputs, plain / ...); medians of the per-rep
ratios "with outputs / plain". Target: <= 1.03.

    outputs_fixed.py --barrage BIN [--reps 8] [--http-n 600000] [--redis-n 1000000] [--out DIR]
"""
import argparse, os, shutil, signal, socket, statistics, subprocess, tempfile, time

PEER_CONF = os.environ.get("PEERBENCH", "/work/shared/bench") + "/conf/nginx.conf.tmpl"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, what):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited at start")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} is not listening on {port}")


def start_nginx(tmp):
    port = free_port()
    prefix = os.path.join(tmp, "nginx")
    for d in ("logs", "tmp"):
        os.makedirs(os.path.join(prefix, d), exist_ok=True)
    conf = open(PEER_CONF).read().replace("@PORT@", str(port)).replace("@WORKER_CONNECTIONS@", "2048")
    path = os.path.join(prefix, "nginx.conf")
    open(path, "w").write(conf)
    p = subprocess.Popen(["taskset", "-c", "0", "nginx", "-p", prefix, "-c", path],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, p, "nginx")
    return p, port


def start_redis():
    port = free_port()
    p = subprocess.Popen(["taskset", "-c", "0", "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, p, "redis-server")
    return p, port


def run(cmd):
    """barrage's CPU seconds (user + system) and its completed requests."""
    t0 = time.monotonic()
    p = subprocess.Popen(["taskset", "-c", "1"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    if p.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}: {err}")
    return ru.ru_utime + ru.ru_stime, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--barrage", required=True)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--http-n", type=int, default=600000)
    ap.add_argument("--redis-n", type=int, default=1000000)
    ap.add_argument("--out", default="/tmp/barrage-bench/outputs-fixed")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="outputs-fixed-", dir=a.out)
    nginx, hport = start_nginx(tmp)
    redis, rport = start_redis()
    cases = {
        "HTTP vs nginx, 100 conns": ([f"http://127.0.0.1:{hport}/", "-c", "100"], a.http_n),
        "redis PING, 50 conns": ([f"tcp://127.0.0.1:{rport}", "-m", "PING\\r\\n", "--expect", "line",
                                  "-c", "50"], a.redis_n),
    }
    rows = {c: {"plain": [], "outputs": []} for c in cases}
    try:
        for rep in range(a.reps):
            for case, (target, n) in cases.items():
                order = ["plain", "outputs"] if rep % 2 == 0 else ["outputs", "plain"]
                for v in order:
                    rundir = os.path.join(tmp, f"{rep}-{len(rows[case][v])}-{v}-{abs(hash(case))}")
                    os.makedirs(rundir)
                    cmd = [a.barrage] + target + ["-t", "1", "-n", str(n), "-d", "120s", "-q", "--no-tui",
                                                  "--json", os.path.join(rundir, "r.json")]
                    if v == "outputs":
                        cmd += ["--prometheus", "127.0.0.1:0", "--web", "127.0.0.1:0",
                                "--out", os.path.join(rundir, "stream"), "--csv", os.path.join(rundir, "s.csv"),
                                "--hdr-log", os.path.join(rundir, "l.hlog")]
                    cpu, wall = run(cmd)
                    import json
                    done = json.load(open(os.path.join(rundir, "r.json")))["summary"]["exchanges"]["completed"]
                    rows[case][v].append(cpu / done * 1e6)
                    print(f"rep {rep + 1} {case} {v}: {cpu / done * 1e6:.3f} CPU us/request "
                          f"({done:,} in {wall:.1f} s)", flush=True)
                    shutil.rmtree(rundir)
    finally:
        for p in (nginx, redis):
            p.send_signal(signal.SIGTERM)
            p.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print("| case | plain, CPU µs/request (median) | with every output | ratio (median of per-rep) | per-rep ratios |")
    print("|---|---|---|---|---|")
    for case, r in rows.items():
        ratios = [o / p for p, o in zip(r["plain"], r["outputs"])]
        print(f"| {case} | {statistics.median(r['plain']):.3f} | {statistics.median(r['outputs']):.3f} | "
              f"**{statistics.median(ratios):.3f}** | {', '.join(f'{x:.3f}' for x in ratios)} |")


if __name__ == "__main__":
    main()
