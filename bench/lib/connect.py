#!/usr/bin/env python3
"""Time to connect N idle connections, as the server counts them (bench/connect.sh).

For each tool and rep: a fresh `barrage serve echo` (its --metrics endpoint gives the open
connections), the tool started with N connections and no pacing, the server's
`barrage_server_connections_open` polled every 10 ms until it reaches N; the time from the
tool's start to then is the figure (process start included, the same for every tool). The
tool is then stopped (SIGTERM) and the server too. Medians over reps.

    connect.py --barrage BIN [--tcpkali BIN] [--conns 19000] [--reps 3] [--out DIR]
"""
import argparse, os, signal, statistics, subprocess, sys, time, urllib.request


def free_ports(n):
    """n distinct free ports (all held until all are chosen)."""
    import socket
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def open_conns(mport):
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=2).read().decode()
    except OSError:
        return None
    for line in body.splitlines():
        if line.startswith("barrage_server_connections_open "):
            return int(float(line.split()[1]))
    return None


def one(barrage, tool, cmd, n, out):
    port, mport = free_ports(2)
    server = subprocess.Popen(
        [barrage, "serve", "echo", "--listen", f"127.0.0.1:{port}", "--threads", "1",
         "--metrics", f"127.0.0.1:{mport}", "--exit-after", "120s"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    banner = server.stdout.readline()
    deadline = time.monotonic() + 10
    while open_conns(mport) is None:
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start: {banner.strip()}")
        time.sleep(0.01)
    argv = [a.replace("{port}", str(port)).replace("{n}", str(n)) for a in cmd]
    log = open(os.path.join(out, f"{tool}.log"), "a")
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    took, last, peak = None, 0, 0
    while time.monotonic() - t0 < 60:
        c = open_conns(mport) or 0
        peak = max(peak, c)
        if c >= n:
            took = time.monotonic() - t0
            break
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    server.send_signal(signal.SIGTERM)
    try:
        server.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.communicate()
    return took, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--barrage", required=True)
    ap.add_argument("--tcpkali")
    ap.add_argument("--conns", type=int, default=19000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="/tmp/barrage-bench/connect")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tools = {
        "barrage": [a.barrage, "tcp://127.0.0.1:{port}", "-c", "{n}", "-t", "2", "--think", "60s",
                    "-d", "60s", "-q", "--no-tui"],
    }
    if a.tcpkali:
        tools["tcpkali"] = [a.tcpkali, "-c", "{n}", "--connect-rate", "1000000", "-w", "2",
                            "-T", "60s", "127.0.0.1:{port}"]
    results = {t: [] for t in tools}
    for rep in range(a.reps):
        for t, cmd in tools.items():
            took, peak = one(a.barrage, t, cmd, a.conns, a.out)
            results[t].append(took)
            print(f"rep {rep + 1} {t}: " + (f"{a.conns} open after {took:.3f} s" if took else f"only {peak} opened"), flush=True)
    print()
    print(f"| tool | time to {a.conns:,} open connections (median of {a.reps}) | reps |")
    print("|---|---|---|")
    for t, v in results.items():
        ok = [x for x in v if x is not None]
        med = f"{statistics.median(ok):.3f} s" if len(ok) == len(v) else "did not open them all"
        print(f"| {t} | {med} | {', '.join('-' if x is None else f'{x:.3f}' for x in v)} |")


if __name__ == "__main__":
    main()
