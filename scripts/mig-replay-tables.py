#!/usr/bin/env python3
"""The tables of docs/mig-replay.md ("Results") from a `tessera replay --mig` summary.csv.

Usage: scripts/mig-replay-tables.py OUT/summary.csv > tables.md

Prints three markdown tables: per protocol, the cells where tessera is at or above the best
baseline (and the ones behind); the headroom, tessera against the upper bound; and every cell
but load 0.6 with each policy's headline (demand served at saturation, acceptance in steady
state, pods ever placed with the pending queue).
"""

import csv
import statistics
import sys

BASELINES = ["hami-2.10", "largest-free-run", "first-fit", "best-fit", "static-1g",
             "static-balanced"]
REFERENCE = "reference-pooled-slices"
BOUND = "upper-bound"


def headline(protocol):
    if protocol == "saturation":
        return "served_slices_pct"
    if protocol.startswith("pending-"):
        return "ever_placed_pct"
    return "acceptance_pct"


def kind(protocol):
    return protocol.split("-")[0]


def main(path):
    cells = {}  # (fleet, workload, protocol) -> {policy: row}
    order = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["fleet"], row["workload"], row["protocol"])
            if key not in cells:
                cells[key] = {}
                order.append(key)
            cells[key][row["policy"]] = row

    def value(key, policy, stat="mean"):
        row = cells[key].get(policy)
        if row is None:
            return None
        return float(row[headline(key[2]) + "_" + stat])

    def best_baseline(key):
        present = [(value(key, p), p) for p in BASELINES if p in cells[key]]
        return max(present)

    counts = {}
    behind = {}
    headroom = {}
    for key in order:
        if "tessera" not in cells[key]:
            continue
        k = kind(key[2])
        best, who = best_baseline(key)
        gap = value(key, "tessera") - best
        counts.setdefault(k, [0, 0])
        counts[k][1] += 1
        if gap >= -1e-9:
            counts[k][0] += 1
        else:
            behind.setdefault(k, []).append((gap, key, who))
        bound = value(key, BOUND)
        if bound is not None and not key[2].endswith("-0.6"):
            load = key[2]
            headroom.setdefault(load, []).append(bound - value(key, "tessera"))

    print("| protocol | cells at or above the best baseline | cells behind (tessera − best) |")
    print("|---|---:|---|")
    for k in ("saturation", "steady", "pending"):
        if k not in counts:
            continue
        worst = sorted(behind.get(k, []))
        listed = "; ".join(f"{g:+.2f} {f} {w} {p} ({b})" for g, (f, w, p), b in worst)
        print(f"| {k} | {counts[k][0]} of {counts[k][1]} | {listed or 'none'} |")
    print()
    print("| protocol | cells | upper bound − tessera: min | mean | max |")
    print("|---|---:|---:|---:|---:|")
    for load, gaps in headroom.items():
        print(f"| {load} | {len(gaps)} | {min(gaps):.1f} | {statistics.mean(gaps):.1f} | "
              f"{max(gaps):.1f} |")
    print()
    print("| fleet | workload | protocol | tessera | hami-2.10 | largest-free-run | first-fit | "
          "best-fit | static-1g | static-bal. | reference (pooled) | upper bound | "
          "tessera − best baseline |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in order:
        if key[2].endswith("-0.6") or "tessera" not in cells[key]:
            continue
        t = value(key, "tessera")
        out = [key[0], key[1], key[2], f"**{t:.1f}** ±{value(key, 'tessera', 'std'):.1f}"]
        for p in BASELINES + [REFERENCE, BOUND]:
            v = value(key, p)
            out.append("-" if v is None else f"{v:.1f}")
        out.append(f"{t - best_baseline(key)[0]:+.2f}")
        print("| " + " | ".join(out) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
