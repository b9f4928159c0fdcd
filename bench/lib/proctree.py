#!/usr/bin/env python3
"""Samples the CPU and RSS of process trees once a second until they are all gone.

    proctree.py OUT.csv NAME=PID [NAME=PID ...]

Each NAME is a process and all its descendants (found through /proc/*/stat parent links,
read every sample, so children that start later are counted). One CSV row per sample and
tree: t_s, name, processes, cpu_cores (CPU time over the interval, all processes), rss_mib.
Also writes the machine's idle share per sample (name "machine", cpu_cores = busy cores).
Stops when every root is gone, or after --max-s (default 6 h).
"""
import os, sys, time

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def procs():
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        rest = s[s.rfind(")") + 2:].split()
        ppid, utime, stime, rss = int(rest[1]), int(rest[11]), int(rest[12]), int(rest[21])
        out[int(d)] = (ppid, utime + stime, rss * PAGE)
    return out


def tree(root, ps):
    kids = {}
    for pid, (ppid, _, _) in ps.items():
        kids.setdefault(ppid, []).append(pid)
    seen, todo = [], [root]
    while todo:
        p = todo.pop()
        if p in ps:
            seen.append(p)
            todo.extend(kids.get(p, []))
    return seen


def machine():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v), v[3] + v[4]


def main():
    args = sys.argv[1:]
    max_s = 6 * 3600
    if "--max-s" in args:
        i = args.index("--max-s")
        max_s = float(args[i + 1])
        del args[i:i + 2]
    out, roots = args[0], [(a.split("=")[0], int(a.split("=")[1])) for a in args[1:]]
    last = {}
    t0 = time.monotonic()
    m_last = machine()
    cores = os.cpu_count()
    with open(out, "w") as f:
        f.write("t_s,name,processes,cpu_cores,rss_mib\n")
        while time.monotonic() - t0 < max_s:
            ps = procs()
            now = time.monotonic()
            alive = False
            for name, root in roots:
                pids = tree(root, ps)
                if pids:
                    alive = True
                cpu = {p: ps[p][1] for p in pids}
                rss = sum(ps[p][2] for p in pids)
                prev_t, prev = last.get(name, (None, {}))
                if prev_t is not None:
                    used = sum(c - prev.get(p, c) for p, c in cpu.items())
                    f.write(f"{now - t0:.1f},{name},{len(pids)},{used / TICK / (now - prev_t):.3f},{rss / 2**20:.1f}\n")
                last[name] = (now, cpu)
            total, idle = machine()
            dt, di = total - m_last[0], idle - m_last[1]
            if dt > 0:
                f.write(f"{now - t0:.1f},machine,{cores},{cores * (1 - di / dt):.3f},0\n")
            m_last = (total, idle)
            f.flush()
            if not alive:
                break
            time.sleep(1)


if __name__ == "__main__":
    main()
