#!/usr/bin/env python3
"""Table of bench/recipe_study.sh's rows: mean test accuracy over the seeds of each dataset,
recipe and setup, its spread, and its distance to one worker (percentage points).

Usage: bench/summarize_recipes.py OUT.csv
"""
import csv
import statistics
import sys
from collections import defaultdict

SETUP_NAMES = {"1w": "1 worker", "2w": "2 workers", "2r": "2 MPI ranks"}


def main(path):
    runs = defaultdict(list)
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["dataset"], row["recipe"], row["setup"])
            runs[key].append(float(row["accuracy"]))
    print("| data | recipe | setup | seeds | mean accuracy | min-max | vs 1 worker (pp) |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for dataset in sorted({k[0] for k in runs}):
        reference = runs.get((dataset, "reference", "1w"))
        ref_mean = statistics.mean(reference) if reference else None
        keys = sorted((k for k in runs if k[0] == dataset),
                      key=lambda k: (k[1] != "reference", k[1], k[2]))
        for key in keys:
            values = runs[key]
            mean = statistics.mean(values)
            delta = "" if ref_mean is None or key[1] == "reference" else \
                f"{100 * (mean - ref_mean):+.2f}"
            print(f"| {dataset} | {key[1]} | {SETUP_NAMES.get(key[2], key[2])} | {len(values)} "
                  f"| {mean:.4f} | {min(values):.4f}-{max(values):.4f} | {delta} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
