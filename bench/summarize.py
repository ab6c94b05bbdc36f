#!/usr/bin/env python3
"""Prints the table of bench/compare_cpu.sh from the files its runs left in one folder.

For run i (1..runs) the folder holds:
  dltrain-i.json  dl-train's summary.json
  dltrain-i.rss   /usr/bin/time -f %M of that run (peak RSS in KiB, last line)
  PEER-i.json     the JSON line printed by bench/pytorch_lenet.py, for each peer of --peers
                  (pytorch: as the environment is; pytorch-clean: with OPENBLAS_* unset)
  PEER-i.rss      /usr/bin/time -f %M of that run
Peak memory is compared as /usr/bin/time measured it, so both sides are measured alike;
dl-train's own peak_rss_bytes is shown beside it as a cross-check.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

OURS = ("dltrain", "dl-train")
PEER_LABELS = {"pytorch": "PyTorch", "pytorch-clean": "PyTorch, OPENBLAS_* unset"}
BYTES_PER_KIB = 1024
BYTES_PER_MIB = 1024 * 1024


def fail(message):
    sys.exit(f"summarize.py: {message}")


def read_json(path):
    """The last line of `path` that is a JSON object (the scripts may log above it)."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except FileNotFoundError:
        fail(f"{path}: not found; run bench/compare_cpu.sh, which writes it")
    try:
        return json.loads("\n".join(lines))  # a whole-file JSON document (summary.json)
    except json.JSONDecodeError:
        pass
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    fail(f"{path}: holds no JSON object; see that run's log")


def read_rss_kib(path):
    try:
        with open(path, encoding="utf-8") as file:
            lines = [line.strip() for line in file if line.strip()]
    except FileNotFoundError:
        fail(f"{path}: not found; run bench/compare_cpu.sh, which writes it")
    if not lines or not lines[-1].isdigit():
        fail(f"{path}: last line is not /usr/bin/time's %M (KiB); see that run's log")
    return int(lines[-1])


def field(record, key, path):
    if key not in record:
        fail(f"{path}: no \"{key}\"; the run wrote an incomplete summary")
    return record[key]


def load_run(folder, framework, run):
    json_path = os.path.join(folder, f"{framework}-{run}.json")
    record = read_json(json_path)
    self_rss = record.get("peak_rss_bytes")
    return {
        "run": run,
        "images_per_second": float(field(record, "train_images_per_second", json_path)),
        "train_seconds": float(field(record, "train_seconds", json_path)),
        "accuracy": float(field(record, "test_accuracy", json_path)),
        "rss_mib": read_rss_kib(os.path.join(folder, f"{framework}-{run}.rss"))
        * BYTES_PER_KIB / BYTES_PER_MIB,
        "self_rss_mib": None if self_rss is None else self_rss / BYTES_PER_MIB,
    }


def cpu_model():
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (lscpu failed)"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Model name":
            return value.strip()
    return "unknown (no Model name in lscpu)"


def print_header(args):
    print(f"date:    {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"cpu:     {cpu_model()}")
    print(f"cores:   {os.cpu_count()} online, {len(os.sched_getaffinity(0))} usable")
    print(f"torch:   {args.torch_version} ({args.pytorch_threads} threads)")
    print(f"command: {args.command}")
    if args.header:
        with open(args.header, encoding="utf-8") as file:
            for line in file:
                print(line.rstrip())
    print()


def print_runs(runs, frameworks):
    print("| run | framework | images/s | train s | accuracy | peak RSS MiB (time) | "
          "peak RSS MiB (self) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    # Rows in the order the runs were made: dl-train, PyTorch, dl-train, ...
    for pair in zip(*(runs[key] for key, _ in frameworks)):
        for (_, label), row in zip(frameworks, pair):
            self_rss = "-" if row["self_rss_mib"] is None else f"{row['self_rss_mib']:.1f}"
            print(f"| {row['run']} | {label} | {row['images_per_second']:.1f} | "
                  f"{row['train_seconds']:.2f} | {row['accuracy']:.4f} | "
                  f"{row['rss_mib']:.1f} | {self_rss} |")
    print()


def summary(rows):
    speeds = [r["images_per_second"] for r in rows]
    accuracies = [r["accuracy"] for r in rows]
    return {
        "best": max(speeds),
        "median": statistics.median(speeds),
        "accuracy_median": statistics.median(accuracies),
        "accuracy_min": min(accuracies),
        "accuracy_max": max(accuracies),
        "rss_median": statistics.median(r["rss_mib"] for r in rows),
    }


def print_summary(runs, frameworks):
    sums = {key: summary(runs[key]) for key, _ in frameworks}
    print("| framework | best images/s | median images/s | accuracy (median, min-max) | "
          "peak RSS MiB (median) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for key, label in frameworks:
        s = sums[key]
        print(f"| {label} | {s['best']:.1f} | {s['median']:.1f} | {s['accuracy_median']:.4f} "
              f"({s['accuracy_min']:.4f}-{s['accuracy_max']:.4f}) | {s['rss_median']:.1f} |")
    ours = sums[OURS[0]]
    print()
    for key, label in frameworks[1:]:
        theirs = sums[key]
        print(f"dl-train / {label} images/s: best vs best {ours['best'] / theirs['best']:.2f}x, "
              f"median vs median {ours['median'] / theirs['median']:.2f}x; peak RSS (median) "
              f"{ours['rss_median'] / theirs['rss_median']:.2f}x")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="where compare_cpu.sh left the runs' files")
    parser.add_argument("runs", type=int, help="runs of each framework")
    parser.add_argument("--torch-version", default="unknown")
    parser.add_argument("--pytorch-threads", default="?")
    parser.add_argument("--command", default="bench/compare_cpu.sh")
    parser.add_argument("--peers", nargs="+", default=["pytorch"], choices=sorted(PEER_LABELS),
                        help="the PyTorch setups that ran")
    parser.add_argument("--header", help="a file of lines to print in the header")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("runs must be at least 1")
    return args


def main():
    args = parse_args()
    frameworks = [OURS] + [(peer, PEER_LABELS[peer]) for peer in args.peers]
    runs = {key: [load_run(args.folder, key, run) for run in range(1, args.runs + 1)]
            for key, _ in frameworks}
    print_header(args)
    print_runs(runs, frameworks)
    print_summary(runs, frameworks)


if __name__ == "__main__":
    main()
