#!/usr/bin/env bash
# No text of dl-train's own goes around the CLI's stdout and stderr writers through C stdio
# (scripts/check_output_streams.py): the source tree passes, and a planted fmt::print(stderr, ...)
# and fprintf(stderr, ...) each fail, naming the file and line.
set -euo pipefail
: "${DL_SOURCE_DIR:?DL_SOURCE_DIR must name the source tree}"
check="$DL_SOURCE_DIR/scripts/check_output_streams.py"
python3 "$check" "$DL_SOURCE_DIR/src" "$DL_SOURCE_DIR/cuda"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include <cstdio>\n// fprintf(stderr, "a comment is not a call");\nvoid f() { std::fprintf(stderr, "x"); }\n' >"$work/a.cpp"
printf 'void g() {\n  fmt::print(stderr, "{}", 1);\n}\n' >"$work/b.cpp"
if python3 "$check" "$work" >"$work/out.txt"; then
  echo "FAIL: planted C stdio writes passed: $(cat "$work/out.txt")" >&2
  exit 1
fi
grep -q "a.cpp:3: writes through C stdio" "$work/out.txt" || { cat "$work/out.txt" >&2; exit 1; }
grep -q "b.cpp:2: writes through C stdio" "$work/out.txt" || { cat "$work/out.txt" >&2; exit 1; }
grep -q "a.cpp:2:" "$work/out.txt" && { echo "FAIL: a comment was taken for a call" >&2; exit 1; }
echo "ok: the source tree writes only through std::cout and std::cerr; planted writes fail"
