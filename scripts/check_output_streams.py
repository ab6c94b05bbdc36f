#!/usr/bin/env python3
"""Fails on text that dl-train's own code writes through C stdio's stdout or stderr.

Standard output and standard error go through the CLI's writers (ConsoleWriter, installed as
std::cout's and std::cerr's buffers in src/cli/main.cpp): a line written with printf,
fprintf(stderr, ...), fmt::print(stderr, ...), puts or perror bypasses them, can interleave
with their lines and may be lost when the process ends. Write through std::cout or std::cerr.

Usage: check_output_streams.py ROOT [ROOT ...]   (each a folder of sources: src/, cuda/)
"""

import pathlib
import re
import sys

SOURCE_SUFFIXES = {".cpp", ".hpp", ".cu", ".cuh", ".h", ".cc"}
# A C stdio call that writes to the process's standard streams.
C_STDIO_OUTPUT = re.compile(
    r"\b(?:std::)?(?:printf|puts|perror|putchar)\s*\("
    r"|\b(?:std::)?(?:fprintf|fputs|fputc|fwrite|vfprintf)\s*\([^;]*\b(?:stderr|stdout)\b"
    r"|\bfmt::(?:print|vprint)\s*\(\s*(?:stderr|stdout)\b")


def strip_comment(line):
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def problems(root):
    for path in sorted(pathlib.Path(root).rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if C_STDIO_OUTPUT.search(strip_comment(line)):
                yield f"{path}:{number}: writes through C stdio ({line.strip()}); write through " \
                      "std::cout or std::cerr, whose buffers are the CLI's writers"


def main(roots):
    if not roots:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    found = [p for root in roots for p in problems(root)]
    for p in found:
        print(p)
    print(f"check_output_streams: {len(found)} problem(s) in {', '.join(roots)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
