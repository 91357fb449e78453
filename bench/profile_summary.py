#!/usr/bin/env python3
"""Sums a Torch legacy-profiler trace (bench_train_step --profile FILE) per operator name.

Usage: bench/profile_summary.py trace.json [N]   (the N most expensive operators, default 30)

Times are inclusive (an operator's time contains the operators it calls), so nested names
overlap; 'self' subtracts the time of events nested inside each event on the same thread.
"""
import json
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    spans = [e for e in events if e.get("ph") == "X"]
    total = defaultdict(float)
    self_time = defaultdict(float)
    count = defaultdict(int)
    by_thread = defaultdict(list)
    for e in spans:
        by_thread[e.get("tid")].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # (end, event, child time)
        for e in evs:
            while stack and stack[-1][0] <= e["ts"]:
                end, ev, child = stack.pop()
                self_time[ev["name"]] += ev["dur"] - child
            if stack:
                stack[-1][2] += e["dur"]
            stack.append([e["ts"] + e["dur"], e, 0.0])
            total[e["name"]] += e["dur"]
            count[e["name"]] += 1
        while stack:
            end, ev, child = stack.pop()
            self_time[ev["name"]] += ev["dur"] - child
    all_self = sum(self_time.values())
    print(f"{'operator':48} {'calls':>6} {'self ms':>9} {'self %':>7} {'total ms':>9}")
    for name, t in sorted(self_time.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{name[:48]:48} {count[name]:6d} {t / 1e3:9.1f} {100 * t / all_self:6.1f}% {total[name] / 1e3:9.1f}")
    print(f"{'all (self)':48} {'':6} {all_self / 1e3:9.1f}")


if __name__ == "__main__":
    main()
