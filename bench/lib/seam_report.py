#!/usr/bin/env python3
"""Before/after table from shared-harness results directories (runs.jsonl of each suite).

For each suite and case: per build, medians over reps of req/s, generator CPU µs/request (whole
run: wait4 rusage CPU / completed requests) and the steady-state one (CPU rate over the middle of
the load / req/s); then AFTER/BEFORE as the median of per-rep ratios (both builds measured in
the same rep, interleaved), every rep's ratio, and the target check (ratio <= --max-ratio).
Errors and status are read from each run's barrage.json (summary.errors.total, status).

usage: seam_report.py [--max-ratio 1.03] [--before barrage-before] [--after barrage-after] LABEL=DIR ...
"""
import argparse, json, os, statistics

ap = argparse.ArgumentParser()
ap.add_argument("suites", nargs="+", help="LABEL=RESULTS_DIR")
ap.add_argument("--before", default="barrage-before")
ap.add_argument("--after", default="barrage-after")
ap.add_argument("--max-ratio", type=float, default=1.03)
a = ap.parse_args()


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=2):
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{nd}f}"


def result_file(out, r):
    tag = "-".join(f"{k}{v}" for k, v in r["case"].items())
    try:
        return json.load(open(os.path.join(out, "runs", f"rep{r['rep']}", tag, r["name"], "barrage.json")))
    except (OSError, ValueError):
        return None


def good(r):
    return bool(r.get("rps")) and r.get("rc") == 0 and not r.get("timed_out")


rows, checks = [], []
for spec in a.suites:
    label, out = spec.split("=", 1)
    path = os.path.join(out, "runs.jsonl")
    if not os.path.exists(path):
        rows.append(f"| {label} | – | – | no runs.jsonl in {out} | | | | | | | |")
        continue
    recs = [json.loads(x) for x in open(path)]
    for case in list(dict.fromkeys(json.dumps(r["case"], sort_keys=True) for r in recs)):
        cs = [r for r in recs if json.dumps(r["case"], sort_keys=True) == case]
        ckey = ", ".join(f"{k} {v}" for k, v in json.loads(case).items())
        by = {n: {r["rep"]: r for r in cs if r["name"] == n and good(r)} for n in (a.before, a.after)}
        for n in (a.before, a.after):
            mine = [r for r in cs if r["name"] == n]
            ok = list(by[n].values())
            errs, notes = [], []
            for r in mine:
                d = result_file(out, r)
                if d is None:
                    notes.append(f"rep{r['rep']}: no barrage.json")
                    continue
                errs.append(d["summary"]["errors"].get("total", 0))
                if d.get("status") != "completed":
                    notes.append(f"rep{r['rep']}: {d.get('status')}")
            other = [(r.get("cpu0_busy_pct") or 0) + (r.get("cpu1_busy_pct") or 0)
                     - 100.0 * (r["gen_cpu_s"] + r["server_cpu_s"]) / r["wall_s"] for r in ok if r["wall_s"]]
            rps = [r["rps"] for r in ok]
            rows.append("| " + " | ".join([
                label, ckey, n.replace("barrage-", ""), f"{len(ok)}/{len(mine)}",
                f"{f(med(rps))} ({f(min(rps))}–{f(max(rps))})" if rps else "failed",
                f(med([r.get("gen_cpu_us_per_unit") for r in ok]), 3),
                f(med([r.get("steady_gen_cpu_us_per_unit") for r in ok]), 3),
                f(med([r.get("steady_gen_cpu_pct") for r in ok]), 0),
                f(med([r.get("steady_server_cpu_pct") for r in ok]), 0), f(med(other), 0),
                f(med(errs), 0) + (" (" + "; ".join(notes) + ")" if notes else "")]) + " |")
        cpu, steady, rate = [], [], []
        for rep, r in sorted(by[a.after].items()):
            b = by[a.before].get(rep)
            if not b:
                continue
            if r.get("gen_cpu_us_per_unit") and b.get("gen_cpu_us_per_unit"):
                cpu.append(r["gen_cpu_us_per_unit"] / b["gen_cpu_us_per_unit"])
            if r.get("steady_gen_cpu_us_per_unit") and b.get("steady_gen_cpu_us_per_unit"):
                steady.append(r["steady_gen_cpu_us_per_unit"] / b["steady_gen_cpu_us_per_unit"])
            rate.append(r["rps"] / b["rps"])
        checks.append((label, ckey, cpu, steady, rate))

print("| suite | case | build | reps ok | req/s median (min–max) | gen CPU µs/req | steady gen CPU µs/req "
      "| gen CPU % | server CPU % | other CPU % | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print()
print(f"AFTER ÷ BEFORE, median of per-rep ratios (same rep, interleaved); target: CPU µs/req ratio ≤ {a.max_ratio:.2f}")
print()
print("| suite | case | CPU µs/req ratio (per rep) | target | steady CPU µs/req ratio (per rep) | req/s ratio (per rep) |")
print("|---|---|---|---|---|---|")
for label, ckey, cpu, steady, rate in checks:
    m = med(cpu)
    verdict = "–" if m is None else ("met" if m <= a.max_ratio else "MISSED")
    print(f"| {label} | {ckey} | **{f(m, 3)}** ({', '.join(f(x, 3) for x in cpu)}) | {verdict} "
          f"| {f(med(steady), 3)} ({', '.join(f(x, 3) for x in steady)}) "
          f"| {f(med(rate), 3)} ({', '.join(f(x, 3) for x in rate)}) |")
