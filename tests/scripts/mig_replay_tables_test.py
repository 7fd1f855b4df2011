#!/usr/bin/env python3
"""scripts/mig-replay-tables.py: the cells behind the best baseline, seed by seed.

Two steady-state cells where tessera's mean is below a baseline's: in one every seed is
behind (the 95% interval of the per-seed difference stays below zero), in the other the seeds
disagree (the interval reaches zero). The first table must count the second as within the
noise and list the first, with its paired mean and half-width.
"""

import csv
import math
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "mig-replay-tables.py")

# (workload, policy) -> acceptance % per seed 1..4
RUNS = {
    ("clear", "tessera"): [80.0, 81.0, 82.0, 83.0],
    ("clear", "first-fit"): [81.0, 82.0, 82.5, 84.0],  # ahead by 1, 1, 0.5, 1
    ("noisy", "tessera"): [80.0, 82.0, 81.0, 83.0],
    ("noisy", "best-fit"): [82.0, 80.5, 82.0, 82.0],  # -2, +1.5, -1, +1
}


def write(directory):
    with open(os.path.join(directory, "summary.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["fleet", "workload", "protocol", "policy", "acceptance_pct_mean",
                      "acceptance_pct_std"])
        for (workload, policy), values in RUNS.items():
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
            out.writerow(["f", workload, "steady-1.2", policy, f"{mean:.3f}", f"{std:.3f}"])
    with open(os.path.join(directory, "runs.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["fleet", "workload", "protocol", "policy", "seed", "acceptance_pct"])
        for (workload, policy), values in RUNS.items():
            for seed, value in enumerate(values, start=1):
                out.writerow(["f", workload, "steady-1.2", policy, seed, f"{value:.3f}"])


def tables(directory):
    return subprocess.run([sys.executable, SCRIPT, os.path.join(directory, "summary.csv")],
                          check=True, capture_output=True, text=True).stdout


class MigReplayTablesTest(unittest.TestCase):
    def test_cells_behind_split_by_their_paired_interval(self):
        with tempfile.TemporaryDirectory() as directory:
            write(directory)
            first = tables(directory).split("\n\n")[0]
        steady = [line for line in first.splitlines() if line.startswith("| steady |")]
        self.assertEqual(len(steady), 1, first)
        # Both cells behind; one within its interval, one beyond.
        self.assertIn("| 0 of 2 | 1 |", steady[0])
        # Differences -1, -1, -0.5, -1: mean -0.875, sd 0.25, t(3) = 3.182: +-0.40.
        self.assertIn("-0.88 f clear steady-1.2 (first-fit) (seed by seed -0.88 ± 0.40)",
                      steady[0])
        self.assertNotIn("noisy", steady[0])

    def test_without_runs_every_cell_behind_is_listed(self):
        with tempfile.TemporaryDirectory() as directory:
            write(directory)
            os.remove(os.path.join(directory, "runs.csv"))
            first = tables(directory).split("\n\n")[0]
        self.assertIn("| cells behind (tessera − best) |", first)
        self.assertIn("f noisy steady-1.2 (best-fit)", first)
        self.assertNotIn("seed by seed", first)


if __name__ == "__main__":
    unittest.main()
