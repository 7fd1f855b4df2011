#!/usr/bin/env python3
"""The tables of docs/mig-replay.md ("Results") from a `tessera replay --mig` summary.csv.

Usage: scripts/mig-replay-tables.py OUT/summary.csv > tables.md

Prints three markdown tables: per protocol, the cells where tessera is at or above the best
baseline (and the ones behind); the headroom, tessera against the upper bound; and every cell
but load 0.6 with each policy's headline (demand served at saturation, acceptance in steady
state, pods ever placed with the pending queue).

With OUT/runs.csv beside the summary, each cell behind also gets tessera minus that baseline
seed by seed (every policy of a seed meets the same requests), as mean +- the half-width of
its 95% interval (Student's t), and the cells behind are split into those whose interval
reaches zero (within the noise of the seeds) and those beyond it.
"""

import csv
import math
import os
import statistics
import sys

# The 97.5% quantile of Student's t, by degrees of freedom (1-30).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def paired(runs, key, policy, headline_column):
    """tessera - policy over the seeds both ran: (mean, half-width of the 95% interval)."""
    mine = runs.get(key + ("tessera",), {})
    theirs = runs.get(key + (policy,), {})
    diffs = [mine[s][headline_column] - theirs[s][headline_column]
             for s in sorted(mine) if s in theirs]
    if len(diffs) < 2:
        return None
    df = len(diffs) - 1
    t = T975[df - 1] if df <= len(T975) else 1.96 + 2.4 / df
    return statistics.mean(diffs), t * statistics.stdev(diffs) / math.sqrt(len(diffs))


def load_runs(summary_path):
    """(fleet, workload, protocol, policy) -> seed -> row of runs.csv (numbers), or {}."""
    path = os.path.join(os.path.dirname(summary_path), "runs.csv")
    runs = {}
    if not os.path.exists(path):
        return runs
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["fleet"], row["workload"], row["protocol"], row["policy"])
            values = {}
            for name, text in row.items():
                try:
                    values[name] = float(text)
                except ValueError:
                    pass
            runs.setdefault(key, {})[row["seed"]] = values
    return runs

BASELINES = ["hami-2.10", "hami-master", "largest-free-run", "first-fit", "best-fit", "static-1g",
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

    runs = load_runs(path)
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
            behind.setdefault(k, []).append((gap, key, who,
                                             paired(runs, key, who, headline(key[2]))))
        bound = value(key, BOUND)
        if bound is not None and not key[2].endswith("-0.6"):
            load = key[2]
            headroom.setdefault(load, []).append(bound - value(key, "tessera"))

    def describe(entry):
        gap, (f, w, p), who, pair = entry
        seeds = "" if pair is None else f" (seed by seed {pair[0]:+.2f} ± {pair[1]:.2f})"
        return f"{gap:+.2f} {f} {w} {p} ({who}){seeds}"

    def beyond_noise(entry):
        pair = entry[3]
        return pair is None or pair[0] + pair[1] < 0

    if runs:
        print("| protocol | cells at or above the best baseline | behind within the seeds' 95% "
              "interval | behind beyond it (tessera − best) |")
        print("|---|---:|---:|---|")
    else:
        print("| protocol | cells at or above the best baseline | cells behind (tessera − best) |")
        print("|---|---:|---|")
    for k in ("saturation", "steady", "pending"):
        if k not in counts:
            continue
        worst = sorted(behind.get(k, []), key=lambda e: e[0])
        if runs:
            noise = [e for e in worst if not beyond_noise(e)]
            real = [e for e in worst if beyond_noise(e)]
            listed = "; ".join(describe(e) for e in real)
            print(f"| {k} | {counts[k][0]} of {counts[k][1]} | {len(noise)} | "
                  f"{listed or 'none'} |")
        else:
            listed = "; ".join(describe(e) for e in worst)
            print(f"| {k} | {counts[k][0]} of {counts[k][1]} | {listed or 'none'} |")
    print()
    print("| protocol | cells | upper bound − tessera: min | mean | max |")
    print("|---|---:|---:|---:|---:|")
    for load, gaps in headroom.items():
        print(f"| {load} | {len(gaps)} | {min(gaps):.1f} | {statistics.mean(gaps):.1f} | "
              f"{max(gaps):.1f} |")
    print()
    print("| fleet | workload | protocol | tessera | hami-2.10 | hami-master | largest-free-run | "
          "first-fit | best-fit | static-1g | static-bal. | reference (pooled) | upper bound | "
          "tessera − best baseline |")
    print("|---|---|---|" + "---:|" * 12)
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
