#!/usr/bin/env python3
"""Times two commands interleaved (A B A B ...) and reports each round's times and B/A ratio, and
the best and median of each: the way this project compares builds on its noisy machines (say, the
start-up of a test process from two commits). Each command runs through the shell, its output
discarded; a command that fails stops the run.

usage: tools/interleave.py [--rounds N] [--warmup K] --a 'CMD' --b 'CMD' [--label-a A --label-b B]
"""
import argparse
import statistics
import subprocess
import sys
import time


def run(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--label-a", default="A")
    p.add_argument("--label-b", default="B")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (page cache)")
    args = p.parse_args()
    try:
        for _ in range(args.warmup):
            run(args.a), run(args.b)
        ta, tb = [], []
        unit, scale = ("ms", 1e3)
        print(f"round  {args.label_a:>12}  {args.label_b:>12}  {args.label_b}/{args.label_a}")
        for r in range(args.rounds):
            a, b = run(args.a), run(args.b)
            ta.append(a)
            tb.append(b)
            print(f"{r + 1:5d}  {a * scale:10.1f} {unit}  {b * scale:10.1f} {unit}  {b / a:6.3f}")
    except subprocess.CalledProcessError as e:
        print(f"interleave: the command failed (exit {e.returncode}): {e.cmd}", file=sys.stderr)
        return 1
    ratios = [b / a for a, b in zip(ta, tb)]
    print(f"best   {min(ta) * scale:10.1f} {unit}  {min(tb) * scale:10.1f} {unit}  {min(tb) / min(ta):6.3f}")
    print(f"median {statistics.median(ta) * scale:10.1f} {unit}  {statistics.median(tb) * scale:10.1f} {unit}"
          f"  {statistics.median(ratios):6.3f} (median of the rounds' ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
