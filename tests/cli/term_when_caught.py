#!/usr/bin/env python3
"""Runs COMMAND and sends SIGTERM to it as soon as it catches SIGTERM (bit 15 of SigCgt in
/proc/PID/status: its handler is installed), or with --rank N to its MPI rank N (the descendant
whose environment holds OMPI_COMM_WORLD_RANK=N) once that one catches it. Exits 0 when COMMAND
then exits 143, 1 otherwise (or when no such process caught SIGTERM within a minute).

  term_when_caught.py [--rank N] COMMAND...
"""

import os
import signal
import subprocess
import sys
import time

POLL_SECONDS = 0.0005
DEADLINE_SECONDS = 60
EXIT_TIMEOUT_SECONDS = 120
EXPECTED_EXIT = 128 + signal.SIGTERM


def read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def catches_sigterm(pid):
    status = read(f"/proc/{pid}/status")
    if status is None:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:"))
    return int(caught.split()[1], 16) >> (signal.SIGTERM - 1) & 1 == 1


def descends_from(pid, ancestor):
    while pid > 1:
        stat = read(f"/proc/{pid}/stat")
        if stat is None:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent, after the command's name
        if pid == ancestor:
            return True
    return False


def rank_process(job, rank):
    marker = f"OMPI_COMM_WORLD_RANK={rank}".encode()
    for name in os.listdir("/proc"):
        if name.isdigit() and descends_from(int(name), job):
            environ = read(f"/proc/{name}/environ", "rb")
            if environ is not None and marker in environ.split(b"\0"):
                return int(name)
    return None


def main():
    args = sys.argv[1:]
    rank = None
    if args[:1] == ["--rank"]:
        rank, args = int(args[1]), args[2:]
    job = subprocess.Popen(args)
    deadline = time.time() + DEADLINE_SECONDS
    target = None
    while time.time() < deadline and job.poll() is None:
        candidate = job.pid if rank is None else rank_process(job.pid, rank)
        if candidate is not None and catches_sigterm(candidate):
            target = candidate
            break
        time.sleep(POLL_SECONDS)
    if target is None:
        job.kill()
        sys.exit(f"no process caught SIGTERM (exit {job.wait()})")
    os.kill(target, signal.SIGTERM)
    rc = job.wait(timeout=EXIT_TIMEOUT_SECONDS)
    if rc != EXPECTED_EXIT:
        sys.exit(f"exit {rc}, want {EXPECTED_EXIT}")


if __name__ == "__main__":
    main()
