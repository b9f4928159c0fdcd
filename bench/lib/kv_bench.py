#!/usr/bin/env python3
"""barrage's redis:// and memcache:// clients vs the servers' own benchmark tools, side by side,
with a reconciliation of every run against the server's own counters.

Uses the shared peer harness (../shared/bench/lib/bench.py, read-only) as a library: its Server
(pinned to CPU 0, stopped by PID), run_one (generator pinned to CPU 1, CPU time from wait4
rusage, steady-state CPU sampled from /proc, hard timeout, stopped by PID) and its parsers.
What the harness's suites do not do, this does: redis SET/GET/LPUSH with and without
pipelining, memcached, and per run the server's counters before and after.

  kv_bench.py redis    --barrage BIN --out DIR [--tests set,get,lpush --conns 50,800 --pipelines 1,16]
  kv_bench.py memcache --barrage BIN --out DIR [--conns 50,800]

redis: every case (test x conns x pipeline) runs redis-benchmark `-t TEST -P P -n N` and barrage
`--command CMD --pipeline P -n N` with the same N (sized by a calibration run of redis-benchmark so
that it lasts about --dur s); before each run FLUSHALL and CONFIG RESETSTAT, after it INFO
commandstats: calls of the test's command vs the tool's completed count.
memcache: barrage `--command 'get key:{rand%1000}' --command '3*set key:{rand%1000} VALUE'` vs
memcaslap (-F with set 0.75 / get 0.25, 5-byte values) for --dur s each; memcached `stats`
before and after each run: cmd_get, get_hits, get_misses, cmd_set vs the tool's own counts.
Reps are interleaved with rotating order; medians and medians of per-rep ratios.
"""
import argparse, json, os, re, socket, statistics, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("kind", choices=["redis", "memcache"])
ap.add_argument("--barrage", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--peerbench", default=os.environ.get("PEERBENCH", "/work/shared/bench"))
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--dur", type=int, default=4, help="seconds per run (redis: of the calibrated redis-benchmark)")
ap.add_argument("--conns", default="50,800")
ap.add_argument("--tests", default="set,get,lpush", help="redis: redis-benchmark -t names")
ap.add_argument("--pipelines", default="1,16", help="redis: -P / --pipeline values")
ap.add_argument("--port", type=int, default=None)
ap.add_argument("--only", default=None, help="comma list of contenders (default: all)")
ap.add_argument("--barrage-cmd", default=None,
                help="override barrage's command template (placeholders as below plus {command} {inline})")
ap.add_argument("--rb-keyspace", type=int, default=0,
                help="redis: pass -r N to redis-benchmark (random keys from N); 0: its default, one key "
                     "'key:__rand_int__' for every SET and GET. barrage's keys are key:{seq}, one per request, "
                     "so -r 100000000 gives both tools a new key per request (the same work for the server)")
ap.add_argument("--same-keys", action="store_true",
                help="redis: barrage sends redis-benchmark's own commands (its default key "
                     "'key:__rand_int__' and value 'xxx', without -r): byte for byte the same work for the server")
ap.add_argument("--rate-min", type=float, default=1.0, help="target: barrage req/s ratio >= this")
ap.add_argument("--cpu-max", type=float, default=0.6, help="target: barrage CPU/req ratio <= this")
a = ap.parse_args()

sys.path.insert(0, os.path.join(a.peerbench, "lib"))
import bench as H  # noqa: E402  (the shared harness, used as a library)
import parsers  # noqa: E402  (the same module object the harness uses)

os.makedirs(a.out, exist_ok=True)
HOST = "127.0.0.1"
H.assert_loopback(HOST)

RFLAG = f" -r {a.rb_keyspace}" if a.rb_keyspace > 0 else ""
REDIS_CMDS = {"set": "SET key:{seq} {conn}", "get": "GET key:{seq}", "lpush": "LPUSH list {seq}"}
if a.same_keys:
    if a.rb_keyspace > 0:
        sys.exit("--same-keys: redis-benchmark's own commands have one key; drop --rb-keyspace")
    REDIS_CMDS = {"set": "SET key:__rand_int__ xxx", "get": "GET key:__rand_int__", "lpush": "LPUSH mylist xxx"}
MC_COMMANDS = ["get key:{rand%1000}", "3*set key:{rand%1000} VALUE"]
MC_CFG = "key\n16 16 1\nvalue\n5 5 1\ncmd\n0 0.75\n1 0.25\n"  # memcaslap: 0 = set, 1 = get


# ----------------------------------------------------------------- server counters

def talk(port, req, until):
    with socket.create_connection((HOST, port), timeout=5) as s:
        s.sendall(req)
        buf = b""
        while not until(buf):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf.decode(errors="replace")


def redis(port, *args):
    """One command over RESP; returns the reply's text (enough for +OK, bulk INFO text)."""
    req = f"*{len(args)}\r\n" + "".join(f"${len(x)}\r\n{x}\r\n" for x in args)

    def done(b):
        if b[:1] in (b"+", b"-", b":"):
            return b.endswith(b"\r\n")
        if b[:1] == b"$":
            head, _, rest = b.partition(b"\r\n")
            return len(rest) >= int(head[1:]) + 2 if head else False
        return False
    return talk(port, req.encode(), done)


def redis_calls(port):
    """{command: calls} from INFO commandstats (cmdstat_set:calls=3,usec=...)."""
    text = redis(port, "INFO", "commandstats")
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"cmdstat_([\w|]+):calls=(\d+)", text)}


def mc_stats(port):
    text = talk(port, b"stats\r\n", lambda b: b.endswith(b"END\r\n"))
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"STAT (\w+) (\d+)\r\n", text)}


# ----------------------------------------------------------------- parsers

def parse_memcaslap(out, err, rundir, params):
    """'Run time: 3.0s Ops: 152645 TPS: 50877 Net_rate: 2.3M/s' plus its own cmd_get/cmd_set/get_misses."""
    r = {}
    m = re.search(r"Run time: ([\d.]+)s Ops: (\d+) TPS: (\d+)", out)
    if m:
        r.update(requests=int(m.group(2)), rps=float(m.group(3)), errors=0)
    for k in ("cmd_get", "cmd_set", "get_misses"):
        m = re.search(rf"^{k}: (\d+)", out, re.M)
        if m:
            r["tool_" + k] = int(m.group(1))
    return r


parsers.parse_memcaslap = parse_memcaslap


def barrage_commands(d):
    """barrage's per-command counts: {command text: {sent, completed, errors, misses}}, from
    summary.totals.commands (one entry per --command, in the order given: config.commands)."""
    counts = d.get("summary", {}).get("totals", {}).get("commands") or []
    names = d.get("config", {}).get("commands") or []
    return {(names[i] if i < len(names) else f"#{i}"): c for i, c in enumerate(counts)}


def command_word(text):
    """'3*set key:{rand%1000} VALUE' -> 'set'"""
    w = str(text).split()[0] if str(text).split() else ""
    return re.sub(r"^\d+\*", "", w).lower()


def barrage_result(rundir):
    try:
        return json.load(open(os.path.join(rundir, "barrage.json")))
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------- cases and contenders

def q(s):
    """Shell-quoted, braces doubled: the harness fills {placeholders} with str.format, and barrage's
    own ({seq}, {conn}, {rand%1000}) must reach barrage as they are."""
    return ("'" + s.replace("'", "'\"'\"'") + "'").replace("{", "{{").replace("}", "}}")


conns_list = [int(x) for x in a.conns.split(",")]
cases, contenders = [], []
if a.kind == "redis":
    for t in a.tests.split(","):
        if t not in REDIS_CMDS:
            sys.exit(f"--tests: unknown test {t} (use {', '.join(REDIS_CMDS)})")
        for c in conns_list:
            for p in (int(x) for x in a.pipelines.split(",")):
                cases.append(dict(test=t, conns=c, pipeline=p))
    contenders.append(dict(name="redis-benchmark", parser="redis_csv", cases=None,
                           cmd="redis-benchmark -h {host} -p {port} -c {conns} -n {n} -P {pipeline} -t {test} --csv" + RFLAG))
    bcmd = a.barrage_cmd or ("{barrage} redis://{host}:{port} --command {command} -c {conns} -t 1 -n {n} "
                             "--pipeline {pipeline} -q --json {rundir}/barrage.json")
else:
    for c in conns_list:
        cases.append(dict(mix="get1-set3", conns=c))
    cfg = os.path.join(a.out, "memcaslap.cfg")
    with open(cfg, "w") as f:
        f.write(MC_CFG)
    contenders.append(dict(name="memcaslap", parser="memcaslap", cases=None,
                           cmd="memcaslap -s {host}:{port} -T 1 -c {conns} -t {dur}s -F " + cfg))
    bcmd = a.barrage_cmd or ("{barrage} memcache://{host}:{port} " + " ".join("--command " + q(x) for x in MC_COMMANDS)
                             + " -c {conns} -t 1 -d {dur}s -q --json {rundir}/barrage.json")
contenders.append(dict(name="barrage", parser="barrage_json", cases=None, cmd=bcmd))
if a.only:
    contenders = [c for c in contenders if c["name"] in a.only.split(",")]
BASE = contenders[0]["name"]


def fill(c, case, n):
    """The command line of contender c for case (placeholders the harness does not know filled here)."""
    extra = dict(barrage=a.barrage)
    if a.kind == "redis":
        text = REDIS_CMDS[case["test"]]
        extra.update(command=q(text), inline=text.replace("{", "{{").replace("}", "}}"))
    cmd = c["cmd"]
    for k, v in extra.items():
        cmd = cmd.replace("{" + k + "}", str(v))
    return dict(c, cmd=cmd)


# ----------------------------------------------------------------- run

port = a.port or (16392 if a.kind == "redis" else 17292)
srvdir = os.path.join(a.out, "server")
os.makedirs(srvdir, exist_ok=True)
if a.kind == "redis":
    server = H.start_redis(srvdir, port)
else:
    user = ["-u", "root"] if os.geteuid() == 0 else []
    server = H.Server("memcached", ["memcached", *user, "-l", HOST, "-p", str(port), "-U", "0", "-t", "1",
                                    "-c", "4096", "-m", "1024"], port, 0, srvdir)
meta = dict(kind=a.kind, reps=a.reps, dur=a.dur, cases=cases, server=server.name, server_pid=server.pid,
            contenders=contenders, barrage=a.barrage, started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
json.dump(meta, open(os.path.join(a.out, "meta.json"), "w"), indent=1)
print(f"[kv] {a.kind}: server {server.name} pid {server.pid} on {HOST}:{port}; out {a.out}", file=sys.stderr, flush=True)

records = []
try:
    n_for = {}
    for case in cases:
        if a.kind != "redis":
            continue
        cal = dict(name="calibrate", parser="redis_csv",
                   cmd="redis-benchmark -h {host} -p {port} -c {conns} -n {n} -P {pipeline} -t {test} --csv" + RFLAG)
        n0 = 50000 * (8 if case["pipeline"] > 1 else 1)  # ~2 s at this machine's rates
        params = dict(host=HOST, port=port, dur=a.dur, n=n0, url="", **case)
        redis(port, "FLUSHALL")
        r = H.run_one(cal, params, os.path.join(a.out, "calibrate", "-".join(f"{k}{v}" for k, v in case.items())),
                      120, server=server)
        n_for[json.dumps(case)] = max(50000, int((r.get("rps") or 50000) * a.dur) // 1000 * 1000)
        print(f"[kv] calibrate {case}: {r.get('rps')} req/s -> n={n_for[json.dumps(case)]}", file=sys.stderr, flush=True)
    for rep in range(1, a.reps + 1):
        for case in cases:
            k = (rep - 1) % len(contenders)
            order = contenders[k:] + contenders[:k]  # rep k starts with contender k
            n = n_for.get(json.dumps(case), 0)
            for c in order:
                tag = "-".join(f"{kk}{v}" for kk, v in case.items())
                rd = os.path.join(a.out, "runs", f"rep{rep}", tag, c["name"])
                params = dict(host=HOST, port=port, dur=a.dur, n=n, url="", **case)
                if a.kind == "redis":
                    redis(port, "FLUSHALL")
                    redis(port, "CONFIG", "RESETSTAT")
                    before = {}
                else:
                    before = mc_stats(port)
                r = H.run_one(fill(c, case, n), params, rd, a.dur * 4 + 60, server=server)
                if a.kind == "redis":
                    calls = redis_calls(port)
                    r["server_counts"] = {case["test"]: calls.get(case["test"], 0)}
                else:
                    after = mc_stats(port)
                    r["server_counts"] = {k2: after.get(k2, 0) - before.get(k2, 0)
                                          for k2 in ("cmd_get", "get_hits", "get_misses", "cmd_set")}
                if c["name"] == "barrage":
                    d = barrage_result(rd)
                    if d:
                        s = d["summary"]
                        r.update(status=d.get("status"), errors=s.get("errors", {}).get("total"),
                                 sent=s.get("exchanges", {}).get("sent"), completed=s.get("exchanges", {}).get("completed"),
                                 commands=barrage_commands(d))
                    else:
                        r["status"] = "no barrage.json"
                elif a.kind == "redis":
                    r["completed"] = n  # redis-benchmark completes exactly -n requests
                r.update(rep=rep, case=case, n=n or None)
                records.append(r)
                with open(os.path.join(a.out, "runs.jsonl"), "a") as f:
                    f.write(json.dumps(r) + "\n")
                print(f"[kv] rep{rep} {tag} {c['name']}: rps={H.fmt(r.get('rps'))} cpu_us/req={H.fmt(r.get('gen_cpu_us_per_unit'), 2)} "
                      f"srv%={H.fmt(r.get('steady_server_cpu_pct'), 0)} rc={r['rc']}{' TIMEOUT' if r['timed_out'] else ''} "
                      f"server={r['server_counts']}{' PARSE:' + r['parse_error'] if 'parse_error' in r else ''}",
                      file=sys.stderr, flush=True)
                time.sleep(1)
finally:
    server.stop()


# ----------------------------------------------------------------- report

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, nd=2):
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.{nd}f}"


def good(r):
    return bool(r.get("rps")) and r.get("rc") == 0 and not r.get("timed_out")


ckeys = list(cases[0].keys())
print(f"{a.kind}: {a.reps} reps x ~{a.dur} s, interleaved (rotating order); server on CPU 0, generators on CPU 1 "
      f"(barrage -t 1); ratios are medians of per-rep ratios vs {BASE}")
if a.kind == "redis":
    print()
    print(f"Keys: barrage {', '.join(REDIS_CMDS[t] for t in a.tests.split(','))}; redis-benchmark "
          + (f"-r {a.rb_keyspace} (key:<12 random digits> from {a.rb_keyspace:,})" if a.rb_keyspace > 0
             else "without -r (one key, key:__rand_int__)"))
print()
print("| " + " | ".join(ckeys) + f" | tool | reps ok | req/s median (min–max) | req/s ÷ {BASE} | gen CPU µs/req | "
      f"CPU/req ÷ {BASE} | steady gen CPU µs/req | p50 ms | p99 ms | gen CPU % | server CPU % | errors |")
print("|" + "---|" * (len(ckeys) + 12))
checks = []
for case in cases:
    rs = [r for r in records if r["case"] == case]
    base = {r["rep"]: r for r in rs if r["name"] == BASE and good(r)}
    for c in contenders:
        mine = [r for r in rs if r["name"] == c["name"]]
        ok = [r for r in mine if good(r)]
        rr = [r["rps"] / base[r["rep"]]["rps"] for r in ok if r["rep"] in base]
        cr = [r["gen_cpu_us_per_unit"] / base[r["rep"]]["gen_cpu_us_per_unit"] for r in ok
              if r["rep"] in base and r.get("gen_cpu_us_per_unit") and base[r["rep"]].get("gen_cpu_us_per_unit")]
        notes = [f"rep{r['rep']}: {r.get('status') or 'rc ' + str(r.get('rc'))}" for r in mine
                 if not good(r) or (c["name"] == "barrage" and r.get("status") != "completed")]
        rps = [r["rps"] for r in ok]
        print("| " + " | ".join([str(case[k]) for k in ckeys] + [
            c["name"], f"{len(ok)}/{len(mine)}", f"{f(med(rps))} ({f(min(rps))}–{f(max(rps))})" if rps else "failed",
            f(med(rr)), f(med([r.get("gen_cpu_us_per_unit") for r in ok])), f(med(cr)),
            f(med([r.get("steady_gen_cpu_us_per_unit") for r in ok])),
            f(med([r.get("p50_ms") for r in ok]), 3), f(med([r.get("p99_ms") for r in ok]), 3),
            f(med([r.get("steady_gen_cpu_pct") for r in ok]), 0), f(med([r.get("steady_server_cpu_pct") for r in ok]), 0),
            f(med([r.get("errors") for r in mine]), 0) + (" (" + "; ".join(notes) + ")" if notes else "")]) + " |")
        if c["name"] == "barrage" and c["name"] != BASE:
            checks.append((case, med(rr), med(cr), rr, cr))

if checks:
    print()
    if a.kind == "redis":
        print(f"Targets for barrage (issue 9, SET and GET; LPUSH is information): req/s ≥ {a.rate_min:.2f} × {BASE} "
              f"and CPU/req ≤ {a.cpu_max:.2f} × {BASE}")
    else:
        print(f"Issue 9 sets no memcached target; the redis ones (req/s ≥ {a.rate_min:.2f} ×, CPU/req ≤ {a.cpu_max:.2f} ×) "
              "are shown for information")
    print()
    print("| " + " | ".join(ckeys) + " | req/s ratio (per rep) | req/s target | CPU/req ratio (per rep) | CPU target |")
    print("|" + "---|" * (len(ckeys) + 4))
    for case, r, cpu, rr, cr in checks:
        vr = "–" if r is None else ("met" if r >= a.rate_min else "MISSED")
        vc = "–" if cpu is None else ("met" if cpu <= a.cpu_max else "MISSED")
        if case.get("test") not in ("set", "get"):
            vr, vc = f"({vr}, info)", f"({vc}, info)"
        print("| " + " | ".join(str(case[k]) for k in ckeys) + f" | {f(r, 3)} ({', '.join(f(x, 3) for x in rr)}) | {vr} "
              f"| {f(cpu, 3)} ({', '.join(f(x, 3) for x in cr)}) | {vc} |")

print()
print("Reconciliation, every run: the server's own counters (deltas over the run) vs what the tool counted.")
print()
for c in contenders:  # one line per tool first, the full table below
    rs = [r for r in records if r["name"] == c["name"]]
    if a.kind == "redis":
        diffs = [r["server_counts"].get(r["case"]["test"], 0) - (r.get("completed") or 0) for r in rs]
    elif c["name"] == "barrage":
        diffs = [r["server_counts"]["cmd_get"] + r["server_counts"]["cmd_set"] - (r.get("completed") or 0) for r in rs]
    else:
        diffs = [r["server_counts"]["cmd_get"] + r["server_counts"]["cmd_set"] - (r.get("requests") or 0) for r in rs]
    same = sum(1 for d in diffs if d == 0)
    extra = ""
    if a.kind == "memcache" and c["name"] == "barrage":
        def per(r, word, key):
            return next((v.get(key) for k, v in (r.get("commands") or {}).items() if command_word(k) == word), None)
        exact = sum(1 for r in rs if (per(r, "get", "completed"), per(r, "set", "completed"), per(r, "get", "misses"))
                    == tuple(r["server_counts"][k] for k in ("cmd_get", "cmd_set", "get_misses")))
        extra = f"; per command (get == cmd_get, set == cmd_set, get misses == get_misses) in {exact} of {len(rs)}"
    print(f"- {c['name']}: server total == tool's completed count in {same} of {len(rs)} runs{extra}"
          + (f"; differences (server − tool): {', '.join(f'{d:+,d}' for d in diffs if d)}" if same < len(rs) else ""))
print()
if a.kind == "redis":
    print("| " + " | ".join(ckeys) + " | tool | rep | INFO commandstats calls | tool completed | tool sent | per-command (barrage) | equal |")
    print("|" + "---|" * (len(ckeys) + 7))
    for r in records:
        case = r["case"]
        calls = r["server_counts"].get(case["test"])
        per = r.get("commands") or {}
        per_s = ", ".join(f"{k}: {v.get('completed', v) if isinstance(v, dict) else v}" for k, v in per.items()) or "–"
        comp = r.get("completed")
        eq = "–" if comp is None or calls is None else ("yes" if calls == comp else f"no ({calls - comp:+d})")
        print("| " + " | ".join(str(case[k]) for k in ckeys) + f" | {r['name']} | {r['rep']} | {f(calls, 0)} | "
              f"{f(comp, 0)} | {f(r.get('sent'), 0)} | {per_s} | {eq} |")
else:
    print("| " + " | ".join(ckeys) + " | tool | rep | server cmd_get | get_hits | get_misses | cmd_set | tool gets | tool sets | tool misses | tool total completed | server total |")
    print("|" + "---|" * (len(ckeys) + 11))
    for r in records:
        case, sc = r["case"], r["server_counts"]
        if r["name"] == "barrage":
            per = r.get("commands") or {}

            def pc(name, key="completed"):
                for k, v in per.items():
                    if command_word(k) == name and isinstance(v, dict):
                        return v.get(key)
                return None
            tg, ts, tm = pc("get"), pc("set"), pc("get", "misses")
            total = r.get("completed")
        else:
            tg, ts, tm = r.get("tool_cmd_get"), r.get("tool_cmd_set"), r.get("tool_get_misses")
            total = r.get("requests")
        print("| " + " | ".join(str(case[k]) for k in ckeys) + f" | {r['name']} | {r['rep']} | {f(sc['cmd_get'], 0)} | "
              f"{f(sc['get_hits'], 0)} | {f(sc['get_misses'], 0)} | {f(sc['cmd_set'], 0)} | {f(tg, 0)} | {f(ts, 0)} | "
              f"{f(tm, 0)} | {f(total, 0)} | {f(sc['cmd_get'] + sc['cmd_set'], 0)} |")
