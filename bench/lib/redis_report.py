#!/usr/bin/env python3
"""Compact markdown table + target check from a peers-redis results directory (runs.jsonl).

Same statistics as the shared harness's summary.md (medians over reps; ratios are the median
of per-rep ratios against redis-benchmark in the same rep), plus barrage's own error total and
run status read straight from each run's barrage.json (the shared `barrage_json` parser sums
every value of summary.errors, which includes the `total` key, so its error count is doubled).
usage: redis_report.py RESULTS_DIR [BASELINE] [CONTENDER]
"""
import json, os, statistics, sys

out = sys.argv[1]
base = sys.argv[2] if len(sys.argv) > 2 else "redis-benchmark"
me = sys.argv[3] if len(sys.argv) > 3 else "barrage"
recs = [json.loads(x) for x in open(os.path.join(out, "runs.jsonl"))]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=2):
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{nd}f}"


def barrage_file(r):
    tag = "-".join(f"{k}{v}" for k, v in r["case"].items())
    p = os.path.join(out, "runs", f"rep{r['rep']}", tag, r["name"], "barrage.json")
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None


cases = []
for r in recs:
    ck = (r["case"]["test"], r["case"]["conns"])
    if ck not in cases:
        cases.append(ck)

print(f"| test | conns | tool | reps ok | req/s median (min–max) | req/s ratio vs {base} | gen CPU µs/req | "
      f"CPU/req ratio vs {base} | steady gen CPU µs/req | p50 ms | p99 ms | gen CPU % | server CPU % | other CPU % | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
checks = []
for ck in cases:
    rs = [r for r in recs if (r["case"]["test"], r["case"]["conns"]) == ck]
    b_by_rep = {r["rep"]: r for r in rs if r["name"] == base}
    names = list(dict.fromkeys(r["name"] for r in rs))
    for n in names:
        mine = [r for r in rs if r["name"] == n]
        ok = [r for r in mine if r.get("rps") and r.get("rc") == 0 and not r.get("timed_out")]
        ratios, cratios = [], []
        for r in ok:
            b = b_by_rep.get(r["rep"])
            if b and b.get("rps"):
                ratios.append(r["rps"] / b["rps"])
                if b.get("gen_cpu_us_per_unit") and r.get("gen_cpu_us_per_unit"):
                    cratios.append(r["gen_cpu_us_per_unit"] / b["gen_cpu_us_per_unit"])
        if n == me:
            errs, bad = [], []
            for r in mine:
                d = barrage_file(r)
                if d is None:
                    bad.append(f"rep{r['rep']}: no barrage.json")
                    continue
                errs.append(d["summary"]["errors"].get("total", 0))
                if d.get("status") != "completed":
                    bad.append(f"rep{r['rep']}: status {d.get('status')}")
            err_s = f(med(errs), 0) + (" (" + "; ".join(bad) + ")" if bad else "")
        else:
            err_s = f(med([r.get("errors", 0) or 0 for r in mine]), 0)
        rps = [r["rps"] for r in ok]
        other = [(r.get("cpu0_busy_pct") or 0) + (r.get("cpu1_busy_pct") or 0)
                 - 100.0 * (r["gen_cpu_s"] + r["server_cpu_s"]) / r["wall_s"] for r in ok if r["wall_s"]]
        print("| " + " | ".join([
            ck[0], str(ck[1]), n, f"{len(ok)}/{len(mine)}",
            f"{f(med(rps))} ({f(min(rps))}–{f(max(rps))})" if rps else "failed",
            f(med(ratios)), f(med([r.get("gen_cpu_us_per_unit") for r in ok])), f(med(cratios)),
            f(med([r.get("steady_gen_cpu_us_per_unit") for r in ok])),
            f(med([r.get("p50_ms") for r in ok]), 3), f(med([r.get("p99_ms") for r in ok]), 3),
            f(med([r.get("steady_gen_cpu_pct") for r in ok]), 0),
            f(med([r.get("steady_server_cpu_pct") for r in ok]), 0), f(med(other), 0), err_s]) + " |")
        if n == me:
            checks.append((ck, med(ratios), med(cratios), ratios, cratios))

print()
print(f"Targets: {me} req/s ratio >= 1.00 and CPU/req ratio <= 0.80 vs {base} (medians of per-rep ratios)")
print()
print("| test | conns | req/s ratio (per rep) | target ≥ 1.00 | CPU/req ratio (per rep) | target ≤ 0.80 |")
print("|---|---|---|---|---|---|")
for ck, r, c, rs, cs in checks:
    print(f"| {ck[0]} | {ck[1]} | {f(r)} ({', '.join(f(x) for x in rs)}) | {'met' if r and r >= 1.0 else 'MISSED'} "
          f"| {f(c)} ({', '.join(f(x) for x in cs)}) | {'met' if c and c <= 0.8 else 'MISSED'} |")
