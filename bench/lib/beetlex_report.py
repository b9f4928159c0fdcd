"""The table of bench/beetlex-wine.sh from its results directory: per build, the load window's
throughput and latency (from the intended send time), the monitored server's CPU and memory,
barrage's and the other processes' CPU, and the whole run's counts against the server's own.

    python3 bench/lib/beetlex_report.py RESULTS_DIR
"""
import json
import sys


def avg(xs, k):
    return sum(x[k] for x in xs) / len(xs) if xs else float("nan")


def main(out):
    print(f"## BeetleX shape, 1,000 connections x 50 ms: barrage.exe under wine, and the Linux build — {out}\n")
    print("| build | req/s | p50 | p99 | server CPU | server memory | barrage CPU | others' CPU "
          "| sent = completed + failed + in flight | server read = barrage wrote (whole run) | connections accepted |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("windows", "linux"):
        try:
            r = json.load(open(f"{out}/{name}.json"))
            st = json.load(open(f"{out}/{name}-server.json"))
        except (OSError, ValueError) as e:
            print(f"| {name} | no result ({e}) |")
            continue
        s = r["summary"]
        tot = s["totals"]
        lat = s["latency_us"]
        dur = s["duration_s"]
        mon = r.get("monitor") or {}
        procs = mon.get("processes") or []
        # The load window: t in (0, duration] on the run's clock (warm-up before 0).
        load = [x for x in procs[0]["samples"] if 0 < x["t"] <= dur] if procs else []
        gen = [x for x in mon.get("generator", []) if 0 < x["t"] <= dur]
        host = [h for h in mon.get("host", []) if 0 < h["t"] <= dur]
        cores = r["environment"]["cores"]
        others = avg(host, "cpu_pct") * cores - avg(load, "cpu_pct") - avg(gen, "cpu_pct")
        ok = tot["sent"] == tot["completed"] + tot["failed"] + s["exchanges"]["in_flight_at_end"]
        rec = st["bytes_read"] == tot["bytes_written"]
        mem = max((x["rss_bytes"] for x in load), default=0) / 2**20
        private = max((x["private_bytes"] for x in load), default=0) / 2**20
        print(
            f"| {name} ({r['environment']['kernel']}) | {s['rps']['avg']:,.0f} | {lat['p50'] / 1e3:.2f} ms "
            f"| {lat['p99'] / 1e3:.2f} ms | {avg(load, 'cpu_pct'):.0f} % of a core "
            f"| {mem:.1f} MiB working set / RSS, {private:.1f} MiB private "
            f"| {avg(gen, 'cpu_pct'):.0f} % | {others:.0f} % "
            f"| {tot['sent']:,} = {tot['completed']:,} + {tot['failed']:,} + {s['exchanges']['in_flight_at_end']:,} "
            f"({'holds' if ok else 'BROKEN'}) | {st['bytes_read']:,} = {tot['bytes_written']:,} "
            f"({'exact' if rec else 'DIFFERS'}) | {st['connections_accepted']:,} = {tot['connects']:,} |"
        )
    print()
    for name in ("windows", "linux"):
        print(f"{name}: summary {out}/{name}.txt, report {out}/{name}.html")


if __name__ == "__main__":
    main(sys.argv[1])
