#!/usr/bin/env python3
"""Predicts how a CPU run scales with threads from one traced run (src/backend/cpu/task_trace.hpp).

    DL_CPU_TASK_TRACE=trace.txt build/dl-train --config C --set parallel.workers=1 ...
    bench/task_scaling.py trace.txt [--threads 16] [--warmup 0.1] [--top 12]

A traced run executes every op's tasks in order on one thread and records each task's duration.
Most tasks depend on the problem's size alone; those whose items are each computed alone are cut by
the thread count too (items_per_task in src/backend/cpu/thread_pool.hpp, and the Winograd passes'
TaskSpread), so trace with parallel.blasThreads set to the count you ask about (--threads). The
trace says how the same run would spread over P threads: each call takes the makespan of its tasks handed out in order to
P threads (what the pool does: every thread takes the next task when it is free), and the work
between calls stays serial. Memory bandwidth shared by the threads is not modelled, so the figures
are an upper bound for the ops that stream memory (batch normalization, element-wise passes).

Timer noise (another process taking the core during one task) would look like an unbalanced call:
each call's tasks are replaced by the median profile of all calls from the same code with the same
task count, scaled to the call's own median; each gap between calls by the median gap between the
same two ops. The first --warmup fraction of the calls (first-touch
page faults, cold caches) is left out. Prints the predicted speed-up per thread count, then the
ops that lose the most at --threads: time share, task counts, and the time lost to idle threads.
"""
import argparse
import collections
import heapq
import statistics
import subprocess
import sys

THREAD_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128]


def read_trace(path):
    binary, calls = None, []
    with open(path) as f:
        for line in f:
            if line.startswith("# binary "):
                binary = line[len("# binary "):].strip()
                continue
            fields = line.split()
            if len(fields) < 5:
                continue
            start, end, count = int(fields[0]), int(fields[1]), int(fields[2])
            calls.append((start, end, count, fields[3], [int(t) for t in fields[4:4 + count]]))
    return binary, calls


def site_names(binary, sites):
    if binary is None:
        return {s: s for s in sites}
    out = subprocess.run(["addr2line", "-f", "-C", "-e", binary] + sites,
                         capture_output=True, text=True, check=False).stdout.split("\n")
    names = {}
    for i, site in enumerate(sites):
        name = out[2 * i] if 2 * i < len(out) else site
        # The function alone: its namespaces and arguments make the table unreadable.
        name = name.replace("(anonymous namespace)::", "").split("(")[0]
        names[site] = name.replace("dl::cpu::isa_native::", "").replace("dl::cpu::", "") or site
    return names


def makespan(tasks, threads):
    free = [0.0] * min(threads, len(tasks))
    for t in tasks:
        heapq.heappush(free, heapq.heappop(free) + t)
    return max(free)


def robust_calls(calls):
    """Each call's tasks as the median profile of its (site, count) group, at the call's scale."""
    groups = collections.defaultdict(list)
    for c in calls:
        groups[(c[3], c[2])].append(c[4])
    profiles = {k: [statistics.median(col) for col in zip(*v)] for k, v in groups.items()}
    out = []
    for c in calls:
        profile = profiles[(c[3], c[2])]
        scale = statistics.median(c[4]) / max(statistics.median(profile), 1e-9)
        out.append((c[3], [t * scale for t in profile]))
    return out


def robust_serial(calls):
    """The serial time between calls: each gap as the median of the gaps between the same two
    call sites (an op and the one after it), for the same reason as robust_calls."""
    gaps = collections.defaultdict(list)
    for before, after in zip(calls, calls[1:]):
        gaps[(before[3], after[3])].append(max(after[0] - before[1], 0))
    return sum(statistics.median(g) * len(g) for g in gaps.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--threads", type=int, default=16, help="thread count of the per-op table")
    ap.add_argument("--warmup", type=float, default=0.1, help="fraction of calls left out")
    ap.add_argument("--top", type=int, default=12, help="ops listed")
    args = ap.parse_args()
    try:
        binary, calls = read_trace(args.trace)
    except OSError as e:
        sys.exit(f"task_scaling.py: {args.trace}: {e.strerror} (run dl-train with "
                 f"DL_CPU_TASK_TRACE={args.trace} first)")
    calls = calls[int(len(calls) * args.warmup):]
    if not calls:
        sys.exit(f"{args.trace}: no calls traced (was DL_CPU_TASK_TRACE set, on a CPU run?)")
    serial = robust_serial(calls)
    work = robust_calls(calls)
    one = serial + sum(sum(t) for _, t in work)
    print(f"{len(calls)} calls; serial time between calls {serial / one * 100:.1f}% of one thread's")
    print("| threads | predicted speed-up | serial share |")
    print("| ---: | ---: | ---: |")
    for p in THREAD_COUNTS:
        total = serial + sum(makespan(t, p) for _, t in work)
        print(f"| {p} | {one / total:.2f}x | {serial / total * 100:.1f}% |")

    names = site_names(binary, sorted({s for s, _ in work}))
    per_op = collections.defaultdict(lambda: [0.0, 0.0, set()])
    for site, tasks in work:
        entry = per_op[names[site]]
        entry[0] += sum(tasks)
        entry[1] += makespan(tasks, args.threads) - sum(tasks) / args.threads
        entry[2].add(len(tasks))
    at_p = serial + sum(makespan(t, args.threads) for _, t in work)
    print(f"\nOps by the time their idle threads lose at {args.threads} threads ('time': share of "
          f"one thread's run; 'lost': share of the {args.threads}-thread run):")
    print("| op | time | lost | task counts |")
    print("| --- | ---: | ---: | --- |")
    ranked = sorted(per_op.items(), key=lambda kv: -kv[1][1])[:args.top]
    for name, (time, lost, counts) in ranked:
        print(f"| {name} | {time / one * 100:.1f}% | {lost / at_p * 100:.1f}% | "
              f"{', '.join(map(str, sorted(counts)))} |")


if __name__ == "__main__":
    main()
