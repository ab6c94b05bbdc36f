#!/usr/bin/env python3
"""The unit suites' JUnit reporter (tests/catch_session.cpp's junit-failures) writes the report
Catch2's own junit reporter writes: the same test cases, failures, errors and totals, on a program
with planted passes, failures, sections, an exception and a warning. Only the times may differ.

Usage: test_junit_report.py PLANTED_RESULTS_PROGRAM
"""
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.etree import ElementTree

PLANTED_FAILED_CASES = 3  # "one failure among passes", "sections", "an exception after passes"


def report(program, reporter, directory):
    out = Path(directory) / f"{reporter}.xml"
    run = subprocess.run([program, "--reporter", reporter, "--out", str(out)],
                         capture_output=True, text=True, check=False)
    if run.returncode != PLANTED_FAILED_CASES:
        sys.exit(f"{program} --reporter {reporter}: exit {run.returncode}, expected "
                 f"{PLANTED_FAILED_CASES} (the planted failing cases)\n{run.stdout}{run.stderr}")
    return ElementTree.parse(out).getroot()


def without_times(element):
    """The element as text, its time and timestamp attributes and host name dropped."""
    for node in element.iter():
        for attribute in ("time", "timestamp", "hostname"):
            node.attrib.pop(attribute, None)
    return ElementTree.tostring(element, encoding="unicode")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    program = sys.argv[1]
    with tempfile.TemporaryDirectory() as directory:
        stock = report(program, "junit", directory)
        ours = report(program, "junit-failures", directory)
    cases = [case.get("name") for case in ours.iter("testcase")]
    failed = [case.get("name") for case in ours.iter("testcase")
              if case.find("failure") is not None or case.find("error") is not None]
    print(f"junit-failures: {len(cases)} test cases, {len(failed)} failed: {failed}")
    if len(failed) != PLANTED_FAILED_CASES:
        sys.exit(f"expected {PLANTED_FAILED_CASES} failed test cases, got {len(failed)}")
    if without_times(stock) != without_times(ours):
        sys.exit("the junit-failures report differs from Catch2's junit report:\n"
                 f"junit:\n{without_times(stock)}\njunit-failures:\n{without_times(ours)}")
    print("the same report as Catch2's junit reporter, times aside")


if __name__ == "__main__":
    main()
