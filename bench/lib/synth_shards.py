#!/usr/bin/env python3
"""Stretch the shards of a short real run into a long synthetic one, for `barrage merge`'s
memory (issue 24): each shard's --out directory gets SECONDS seconds (its measured seconds
repeated in turn, keys, start_ns and end_ns moved to second i) and then its own drain line;
run.json's timeline and spec say the longer duration. The histograms are the real run's (each
second decodes to a full-size histogram in memory, whatever its counts).

    synth_shards.py --seconds 43200 SRC_DIR0 SRC_DIR1 ... OUT_DIR
writes OUT_DIR/shard0 .. OUT_DIR/shardN-1 (no result.json: merge takes them as finished only
with --finished, which copies the source's result.json).
"""
import argparse
import json
import os
import shutil

S = 1_000_000_000
DRAIN = 2**64 - 1


def stretch(src, dst, seconds, finished):
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "run.json")) as f:
        header = json.load(f)
    header["timeline"]["load_end_ns"] = seconds * S
    if header.get("spec"):
        header["spec"]["duration_ns"] = seconds * S
    with open(os.path.join(dst, "run.json"), "w") as f:
        json.dump(header, f, indent=1)
    lines = [json.loads(l) for l in open(os.path.join(src, "seconds.jsonl")) if l.strip()]
    load = [d for d in lines if d["key"] != DRAIN]
    drain = [d for d in lines if d["key"] == DRAIN]
    with open(os.path.join(dst, "seconds.jsonl"), "w") as out:
        for i in range(seconds):
            d = dict(load[i % len(load)])
            d["key"], d["start_ns"], d["end_ns"] = i * S, i * S, (i + 1) * S
            out.write(json.dumps(d, separators=(",", ":")) + "\n")
        for d in drain:
            d = dict(d)
            d["start_ns"], d["end_ns"] = seconds * S, seconds * S + (d["end_ns"] - d["start_ns"])
            out.write(json.dumps(d, separators=(",", ":")) + "\n")
    if finished and os.path.exists(os.path.join(src, "result.json")):
        shutil.copy(os.path.join(src, "result.json"), os.path.join(dst, "result.json"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=int, default=43200)
    p.add_argument("--finished", action="store_true")
    p.add_argument("src", nargs="+")
    p.add_argument("out")
    a = p.parse_args()
    for i, src in enumerate(a.src):
        stretch(src, os.path.join(a.out, f"shard{i}"), a.seconds, a.finished)


if __name__ == "__main__":
    main()
