#!/usr/bin/env python3
"""Compact markdown table + target check from a shared-harness results directory (runs.jsonl).

Same statistics as the harness's summary.md: medians over reps, ratios are medians of per-rep
ratios (contender and reference measured in the same rep, interleaved). Two references:
  --rate-vs A,B,C  rate ratio = contender's rate / the best (highest) rate of A, B, C in that rep
  --cpu-vs X       CPU ratio  = contender's generator CPU µs per unit / X's in that rep
The target check applies to --me only: rate ratio >= --rate-min (if given) and CPU ratio <= --cpu-max.
barrage's errors and run status are read from each run's barrage.json (summary.errors.total,
status): the shared `barrage_json` parser adds the `total` key to the sum, doubling the count.

usage: peer_report.py RESULTS_DIR --unit req --rate-vs wrk,h2load,oha --rate-min 1.0 --cpu-vs wrk --cpu-max 0.8
"""
import argparse, json, os, statistics

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--me", default="barrage")
ap.add_argument("--unit", default="req")
ap.add_argument("--rate-vs", required=True, help="comma list: rate ratio is vs the best of these per rep")
ap.add_argument("--rate-min", type=float, default=None, help="target: rate ratio >= this (omit: no target)")
ap.add_argument("--cpu-vs", required=True, help="CPU per unit ratio reference")
ap.add_argument("--cpu-max", type=float, required=True, help="target: CPU ratio <= this")
a = ap.parse_args()
unit = a.unit

recs = [json.loads(x) for x in open(os.path.join(a.out, "runs.jsonl"))]
ran = {r["name"] for r in recs}
rate_vs = [n for n in a.rate_vs.split(",") if n in ran] or a.rate_vs.split(",")  # the ones that took part
meta = json.load(open(os.path.join(a.out, "meta.json")))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=2):
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{nd}f}"


def rundir(r):
    tag = "-".join(f"{k}{v}" for k, v in r["case"].items())
    return os.path.join(a.out, "runs", f"rep{r['rep']}", tag, r["name"])


def barrage_file(r):
    try:
        return json.load(open(os.path.join(rundir(r), "barrage.json")))
    except (OSError, ValueError):
        return None


def good(r):
    return bool(r.get("rps")) and r.get("rc") == 0 and not r.get("timed_out")


cases = list(dict.fromkeys(r["case"]["conns"] for r in recs))
rv = "best of " + "/".join(rate_vs) if len(rate_vs) > 1 else rate_vs[0]
print(f"server: {meta.get('server')}, {meta.get('reps')} reps x {meta.get('dur')} s, url {meta.get('url')}")
print()
print(f"| conns | tool | reps ok | {unit}/s median (min–max) | {unit}/s ÷ {rv} | gen CPU µs/{unit} | "
      f"CPU/{unit} ÷ {a.cpu_vs} | steady gen CPU µs/{unit} | p50 ms | p99 ms | gen CPU % | server CPU % | "
      f"other CPU % | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
checks = {}
for ck in cases:
    rs = [r for r in recs if r["case"]["conns"] == ck]
    reps = sorted({r["rep"] for r in rs})
    best = {}  # rep -> best rate among the rate references that ran fine in that rep
    for rep in reps:
        xs = [r["rps"] for r in rs if r["rep"] == rep and r["name"] in rate_vs and good(r)]
        if xs:
            best[rep] = max(xs)
    cref = {r["rep"]: r for r in rs if r["name"] == a.cpu_vs and good(r)}
    for n in dict.fromkeys(r["name"] for r in rs):
        mine = [r for r in rs if r["name"] == n]
        ok = [r for r in mine if good(r)]
        ratios, cratios = [], []
        for r in ok:
            if r["rep"] in best:
                ratios.append(r["rps"] / best[r["rep"]])
            b = cref.get(r["rep"])
            if b and b.get("gen_cpu_us_per_unit") and r.get("gen_cpu_us_per_unit"):
                cratios.append(r["gen_cpu_us_per_unit"] / b["gen_cpu_us_per_unit"])
        notes = [f"rep{r['rep']}: rc {r.get('rc')}{' timeout' if r.get('timed_out') else ''}"
                 f"{' parse: ' + r['parse_error'][:60] if r.get('parse_error') else ''}" for r in mine if not good(r)]
        if n == a.me:
            errs = []
            for r in mine:
                d = barrage_file(r)
                if d is None:
                    continue
                errs.append(d.get("summary", {}).get("errors", {}).get("total", 0))
                if d.get("status") != "completed":
                    notes.append(f"rep{r['rep']}: status {d.get('status')}")
            err_s = f(med(errs), 0)
            checks[ck] = (med(ratios), med(cratios), ratios, cratios, len(ok), len(mine))
        else:
            err_s = f(med([r.get("errors", 0) or 0 for r in mine]), 0)
        if notes:
            err_s += " (" + "; ".join(notes) + ")"
        rps = [r["rps"] for r in ok]
        other = [(r.get("cpu0_busy_pct") or 0) + (r.get("cpu1_busy_pct") or 0)
                 - 100.0 * (r["gen_cpu_s"] + r["server_cpu_s"]) / r["wall_s"] for r in ok if r["wall_s"]]
        print("| " + " | ".join([
            str(ck), n, f"{len(ok)}/{len(mine)}",
            f"{f(med(rps))} ({f(min(rps))}–{f(max(rps))})" if rps else "failed",
            f(med(ratios)), f(med([r.get("gen_cpu_us_per_unit") for r in ok])), f(med(cratios)),
            f(med([r.get("steady_gen_cpu_us_per_unit") for r in ok])),
            f(med([r.get("p50_ms") for r in ok]), 3), f(med([r.get("p99_ms") for r in ok]), 3),
            f(med([r.get("steady_gen_cpu_pct") for r in ok]), 0),
            f(med([r.get("steady_server_cpu_pct") for r in ok]), 0), f(med(other), 0), err_s]) + " |")

print()
tgt = []
if a.rate_min is not None:
    tgt.append(f"{unit}/s ≥ {a.rate_min:.2f} × {rv} (per rep)")
tgt.append(f"gen CPU µs/{unit} ≤ {a.cpu_max:.2f} × {a.cpu_vs}'s")
print(f"Targets for {a.me}: " + "; ".join(tgt) + " — medians of per-rep ratios")
print()
if not checks:
    print(f"({a.me} did not run in this invocation: no target check)")
else:
    print(f"| conns | reps ok | {unit}/s ratio (per rep) | {unit}/s target | CPU ratio (per rep) | CPU target |")
    print("|---|---|---|---|---|---|")
    for ck, (r, c, rs, cs, nok, n) in checks.items():
        if a.rate_min is None:
            rt = "(info)"
        else:
            rt = "–" if r is None else ("met" if r >= a.rate_min else "MISSED")
        ct = "–" if c is None else ("met" if c <= a.cpu_max else "MISSED")
        print(f"| {ck} | {nok}/{n} | {f(r, 3)} ({', '.join(f(x, 3) for x in rs)}) | {rt} "
              f"| {f(c, 3)} ({', '.join(f(x, 3) for x in cs)}) | {ct} |")
