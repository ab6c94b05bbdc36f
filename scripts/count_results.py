#!/usr/bin/env python3
"""Counts the results of `meson test` for scripts/test.sh.

Each Catch2 suite is one meson test that writes a JUnit report (`--out <file>`); its
test cases are counted from that report. A meson test without a report (a shell script
test, or a suite that crashed before writing one) counts as one test from its result in
meson-logs/testlog.json. A suite that meson saw fail while its report shows no failing
case (killed by a timeout, crashed after writing) counts one extra failure, so a crash
is never reported as a clean run.

Prints one line per suite and, as the last line, `N passed, N failed` (`, N skipped`
when some were skipped). Exits 1 when anything failed or no test result was found.

Usage: count_results.py [BUILD_DIR] [--extra=NAME=passed|failed|skipped ...]   (default: build)
--extra adds a check run outside meson (sanitizers, fuzzing) as one test of the count.
"""

import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

# meson's per-test results (mtest.TestResult) grouped by what they mean here.
PASSED_RESULTS = {"OK", "EXPECTEDFAIL"}
SKIPPED_RESULTS = {"SKIP"}

JUNIT_OUT_FLAG = "--out"
JUNIT_SUFFIX = ".xml"
# A report older than its test's start (by more than file-system timestamp slack) is left
# over from an earlier run and must not be counted.
MTIME_SLACK_SECONDS = 2.0
# Catch2 v2 has no "skipped" result: a [gpu] test case without a GPU returns at once and leaves no
# trace in the JUnit report, so the CUDA test programs print this line at exit instead
# (tests/cuda/gpu_test_support.cpp), and those cases are counted as skipped from it.
GPU_SKIP_LINE = re.compile(r"^tests/cuda: (\d+) \[gpu\] test case\(s\) skipped", re.MULTILINE)


@dataclass
class SuiteCount:
    name: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failed_cases: list = field(default_factory=list)
    note: str = ""


def read_testlog(path):
    """Returns the testlog's entries (one JSON object per line)."""
    entries = []
    with open(path, encoding="utf-8") as log:
        for line_number, line in enumerate(log, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not JSON ({error})") from error
    return entries


def junit_path(entry, build_dir):
    """The report a test was told to write (`--out FILE.xml` in its command), or None."""
    command = entry.get("command") or []
    for index, arg in enumerate(command[:-1]):
        if arg == JUNIT_OUT_FLAG and command[index + 1].endswith(JUNIT_SUFFIX):
            path = command[index + 1]
            return path if os.path.isabs(path) else os.path.join(build_dir, path)
    return None


def is_fresh(path, entry):
    start = entry.get("starttime")
    if start is None:
        return True
    return os.path.getmtime(path) + MTIME_SLACK_SECONDS >= start


def count_junit(path, suite):
    """Adds the test cases of a Catch2 JUnit report to `suite`."""
    root = ElementTree.parse(path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            suite.failed += 1
            suite.failed_cases.append(case.get("name", "?"))
        elif case.find("skipped") is not None:
            suite.skipped += 1
        else:
            suite.passed += 1


def count_entry(entry, build_dir):
    name = entry.get("name", "?")
    result = entry.get("result", "?")
    suite = SuiteCount(name)
    report = junit_path(entry, build_dir)
    if report and os.path.isfile(report) and is_fresh(report, entry):
        try:
            count_junit(report, suite)
        except ElementTree.ParseError as error:
            suite.note = f"unreadable report {report}: {error}"
            suite.failed += 1
            return suite
        for match in GPU_SKIP_LINE.finditer(entry.get("stdout") or ""):
            suite.skipped += int(match.group(1))
        if result not in PASSED_RESULTS and result not in SKIPPED_RESULTS and suite.failed == 0:
            suite.failed += 1
            suite.note = f"meson result {result} although no test case failed"
        return suite
    if report and os.path.isfile(report):
        suite.note = f"report left from an earlier run; meson result {result}"
    elif report:
        suite.note = f"no report written; meson result {result}"
    if result in PASSED_RESULTS:
        suite.passed += 1
    elif result in SKIPPED_RESULTS:
        suite.skipped += 1
    else:
        suite.failed += 1
        if not suite.note:
            suite.note = f"meson result {result}"
    return suite


def total_line(passed, failed, skipped):
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    return line


def print_summary(suites):
    width = max([len("suite")] + [len(suite.name) for suite in suites])
    print(f"{'suite':<{width}}  {'passed':>6}  {'failed':>6}  {'skipped':>7}")
    for suite in suites:
        print(f"{suite.name:<{width}}  {suite.passed:>6}  {suite.failed:>6}  {suite.skipped:>7}"
              + (f"  ({suite.note})" if suite.note else ""))
        for case in suite.failed_cases:
            print(f"{'':<{width}}    FAILED: {case}")


def extra_suite(spec):
    """A check run outside meson (e.g. `sanitizers=passed`): one test in the count."""
    name, _, status = spec.partition("=")
    suite = SuiteCount(name)
    if status == "passed":
        suite.passed = 1
    elif status == "skipped":
        suite.skipped = 1
    else:
        suite.failed = 1
        suite.note = f"status {status or 'missing'}"
    return suite


def main(argv):
    extras = [a[len("--extra="):] for a in argv[1:] if a.startswith("--extra=")]
    argv = [argv[0]] + [a for a in argv[1:] if not a.startswith("--extra=")]
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    build_dir = argv[1] if len(argv) == 2 else "build"
    testlog = os.path.join(build_dir, "meson-logs", "testlog.json")
    try:
        entries = read_testlog(testlog)
    except FileNotFoundError:
        print(f"{testlog}: not found; run `meson test -C {build_dir}` first", file=sys.stderr)
        print(total_line(0, 0, 0))
        return 1
    except ValueError as error:
        print(f"{error}; rerun `meson test -C {build_dir}`", file=sys.stderr)
        print(total_line(0, 0, 0))
        return 1

    suites = [count_entry(entry, build_dir) for entry in entries]
    suites += [extra_suite(spec) for spec in extras]
    passed = sum(suite.passed for suite in suites)
    failed = sum(suite.failed for suite in suites)
    skipped = sum(suite.skipped for suite in suites)
    print_summary(suites)
    if not suites:
        print(f"{testlog}: holds no test results; are any tests registered?", file=sys.stderr)
    print(total_line(passed, failed, skipped))
    return 1 if failed or not suites else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
