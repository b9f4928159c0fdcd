#!/usr/bin/env python3
"""The JSON of a fixed set of runs, by two barrage builds: byte for byte the same apart from
timings (issue 25: a refactor keeps behaviour and output bytes).

    python3 bench/json-same.py BEFORE AFTER            # e.g. /work/bin/barrage-pre25 target/debug/barrage

Each case runs BEFORE, then AFTER, against its own fresh reference server on the same
loopback port (started by the build under test), and compares the two results:

- every key path and the type of every value must be the same (nothing added or lost);
- every value must be equal, except the ones that depend on time: the paths listed in
  TIMED (latencies, rates, durations, CPU, memory, clocks, timestamps, the per-second
  series and histograms, the environment and the analysis drawn from them), which are
  compared by type only.

Counts (exchanges, bytes, errors by class, connections), statuses, messages, the config,
the spec, the command line, thresholds and their verdicts on lax limits are compared
exactly. Traffic goes to 127.0.0.1 only; every run is bounded by -n or -d. Exit 0 when
every case is the same, 1 otherwise (the differing paths are printed).
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Paths (dot-joined, list indices as *) whose values depend on time: compared by type only.
TIMED = [
    r"^started_at$",
    r"^environment(\..*)?$",
    r"^timeseries(\..*)?$",
    r"^histograms(\..*)?$",
    r"^analysis(\..*)?$",
    r"^readiness\.\*\.(figure|status|value|detail|figures|note|measured)(\..*)?$",
    r"^monitor(\..*)?$",
    r"(^|\.)duration_s$",
    r"(^|\.)rps(\..*)?$",
    r"(^|\.)(latency_us|connect_us|ttfb_us|tls_us|handshake_us|own_us|peer_us|remote_us|first_us|last_us|spread_us)(\..*)?$",
    r"(^|\.)io(\..*)?$",
    r"(^|\.)ramp\.(ready_s|.*_s|.*_us)$",
    r"(^|\.)thresholds\.\*\.(actual|reason)$",
    r"(^|\.)connections\.(peak|.*_s)$",
    r"^summary\.warmup(\..*)?$",
    r"^config\.start(_at)?(_ns|_unix)?$",
    r"^spec\.clock(\..*)?$",
    r"^stream(\..*)?$",
    # When a reason's first error came, in ms from the start.
    r"(^|\.)reasons\.\*\.first_ms$",
]
TIMED_RE = [re.compile(p) for p in TIMED]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


EXTRA = []


def timed(path):
    return any(r.search(path) for r in TIMED_RE + EXTRA)


def diff(a, b, path, out):
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        out.append(f"{path or '.'}: {type(a).__name__} vs {type(b).__name__}")
        return
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            p = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append(f"{p}: only in {'after' if k not in a else 'before'}")
            else:
                diff(a[k], b[k], p, out)
        return
    if isinstance(a, list):
        p = f"{path}.*" if path else "*"
        if timed(p) or timed(path):
            return
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items vs {len(b)}")
            return
        for x, y in zip(a, b):
            diff(x, y, p, out)
        return
    if timed(path):
        return
    if a != b:
        out.append(f"{path}: {a!r} vs {b!r}")


class Silent:
    """A TCP server that accepts and never answers (bounded: closes with the case)."""

    def __init__(self, port):
        self.s = socket.socket()
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.s.bind(("127.0.0.1", port))
        self.s.listen(64)
        self.conns = []
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            self.conns.append(c)

    def stop(self):
        try:
            self.s.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        except OSError:
            pass
        self.s.close()
        self.t.join(5)
        for c in self.conns:
            c.close()


def serve(binary, kind, port):
    p = subprocess.Popen(
        [binary, "serve", kind, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit(f"serve {kind} did not listen on {port}")


def stop(p):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def run(binary, args, cwd):
    r = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def case_run(binary, server, flags, tmp):
    """One run against a fresh reference server (or none); its JSON and exit code."""
    port = PORTS[server or "none"]
    srv = None
    if server == "silent":
        srv = Silent(port)
    elif server:
        srv = serve(binary, server, port)
    url = {
        "echo": f"tcp://127.0.0.1:{port}",
        "silent": f"tcp://127.0.0.1:{port}",
        "http": f"http://127.0.0.1:{port}/",
        "ws": f"ws://127.0.0.1:{port}/",
        "none": f"tcp://127.0.0.1:{port}",
    }[server or "none"]
    out = os.path.join(tmp, "r.json")
    try:
        code, _, err = run(binary, [url] + flags + ["-q", "--no-tui", "--json", out], tmp)
    finally:
        if srv is not None:
            srv.stop() if isinstance(srv, Silent) else stop(srv)
    with open(out) as f:
        return code, json.load(f)


def case_merge(binary, _server, _flags, tmp):
    """Two shards of one run, each its own --out, merged."""
    port = PORTS["echo"]
    srv = serve(binary, "echo", port)
    try:
        start = int(time.time()) + 2
        procs = []
        for i in range(2):
            procs.append(subprocess.Popen(
                [binary, f"tcp://127.0.0.1:{port}", "-c", "4", "-t", "1", "-n", "2000",
                 "--shard", f"{i}/2", "--start-at", f"@{start}", "-q", "--no-tui",
                 "--out", os.path.join(tmp, f"s{i}")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for p in procs:
            p.wait(120)
    finally:
        stop(srv)
    out = os.path.join(tmp, "m.json")
    code, _, err = run(binary, ["merge", os.path.join(tmp, "s0"), os.path.join(tmp, "s1"), "-o", out], tmp)
    with open(out) as f:
        return code, json.load(f)


CASES = [
    ("tcp closed loop", case_run, "echo", ["-c", "4", "-t", "1", "-n", "2000"]),
    ("http with thresholds", case_run, "http",
     ["-c", "4", "-t", "1", "-n", "1000", "--threshold", "p99 < 60s", "--threshold", "errors.rate < 50%"]),
    ("ws", case_run, "ws", ["-c", "2", "-t", "1", "-n", "500", "-m", "hello"]),
    ("tcp over two processes", case_run, "echo", ["-c", "4", "-n", "2000", "--processes", "2"]),
    # How many connects fail before the run gives up depends on time (backoff).
    ("nothing listens", case_run, None, ["-c", "2", "-t", "1", "-n", "10"],
     [r"(^|\.)(attempts|failed|refused|total|connect_attempts|connect_failures)$"]),
    ("a server that never answers", case_run, "silent", ["-c", "2", "-t", "1", "-d", "2s"]),
    ("two shards merged", case_merge, None, []),
]

PORTS = {}


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    before, after = (os.path.abspath(b) for b in sys.argv[1:])
    for k in ["echo", "http", "ws", "silent", "none"]:
        PORTS[k] = free_port()
    failed = 0
    for name, fn, server, flags, *extra in CASES:
        EXTRA[:] = [re.compile(p) for p in (extra[0] if extra else [])]
        results = []
        for b in (before, after):
            with tempfile.TemporaryDirectory() as tmp:
                code, doc = fn(b, server, flags, tmp)
                # The command line names the build and the temporary files.
                doc["command_line"] = [
                    "BARRAGE" if i == 0 else re.sub(r"/tmp/[^/]+/", "TMP/", a)
                    for i, a in enumerate(doc.get("command_line", []))
                ]
                results.append((code, doc))
        (ca, a), (cb, b) = results
        out = []
        if ca != cb:
            out.append(f"exit code: {ca} vs {cb}")
        diff(a, b, "", out)
        print(f"{'same' if not out else 'DIFFERENT'}: {name} (exit {ca})")
        for line in out[:40]:
            print(f"    {line}")
        failed += bool(out)
    print(f"{len(CASES) - failed} of {len(CASES)} cases the same")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
