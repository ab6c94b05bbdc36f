#!/usr/bin/env python3
"""Rewrites a .cu file for the host grid (host_grid.hpp), keeping every line where it was.

- `name<<<grid, block, shared, stream>>>(args)` becomes
  `::dl::emu::launch(name, "name", grid, block, shared, stream)(args)`;
- a `#line 1` directive first, so diagnostics and sanitizer reports name the .cu file;
- at the end, the names of the file's __global__ functions are registered, so the test can tell
  which kernels were never launched.

Usage: rewrite_launches.py input.cu output.cpp
"""
import re
import sys

IDENT = re.compile(r"[A-Za-z0-9_:]")


def kernel_start(text, end):
    """Start of the kernel expression that ends just before `end` (a name, maybe templated)."""
    i = end
    while i > 0 and text[i - 1].isspace():
        i -= 1
    if i > 0 and text[i - 1] == ">":
        depth = 0
        while i > 0:
            i -= 1
            if text[i] == ">":
                depth += 1
            elif text[i] == "<":
                depth -= 1
                if depth == 0:
                    break
    while i > 0 and IDENT.match(text[i - 1]):
        i -= 1
    return i


def rewrite(text):
    out = []
    pos = 0
    while True:
        open_at = text.find("<<<", pos)
        if open_at < 0:
            break
        close_at = text.find(">>>", open_at)
        if close_at < 0:
            sys.exit("rewrite_launches.py: <<< without >>>")
        start = kernel_start(text, open_at)
        if start < pos:
            sys.exit("rewrite_launches.py: cannot find the kernel before <<<")
        kernel = text[start:open_at]
        name = " ".join(kernel.split())
        out.append(text[pos:start])
        out.append('::dl::emu::launch(%s, "%s", %s)' % (kernel, name, text[open_at + 3:close_at]))
        pos = close_at + 3
    out.append(text[pos:])
    return "".join(out)


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as f:
        text = f.read()
    kernels = re.findall(r"__global__\s+void\s+(\w+)\s*\(", text)
    body = rewrite(text)
    registration = ""
    if kernels:
        registration = (
            "\nnamespace {\n[[maybe_unused]] const bool dl_emu_kernels_registered =\n"
            "    ::dl::emu::register_kernels(__FILE__, {%s});\n}  // namespace\n"
            % ", ".join('"%s"' % k for k in kernels))
    with open(target, "w") as f:
        f.write('#line 1 "%s"\n' % source)
        f.write(body)
        f.write(registration)


if __name__ == "__main__":
    main()
