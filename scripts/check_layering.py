#!/usr/bin/env python3
"""Checks that no module includes a module above it (docs/ARCHITECTURE.md, "Modules").

The modules, their order, their files and what each uses are read from the module table of
docs/ARCHITECTURE.md and nowhere else: one row per library, lowest first. Its columns:

  module  a name (`core`)
  files   backticked paths: a folder (`src/core/`, everything under it) or a glob naming files
          (`src/config/config_loader.*`); a glob wins over a folder, a longer folder over a
          shorter one, so one folder can hold two libraries
  uses    the modules above it that it may include, by name, comma-separated; `nothing` for none

Every `#include "..."` of every source file under src/ and cuda/ is resolved as the compiler
would (the including file's folder, then the project's include folders; a generated header by its
folder) and must name a file of the same module or of one its row's `uses` lists. Each `uses` entry
must name a module above. The top-level meson.build must enter the modules' folders (subdir) in
the table's order.

Prints one line per problem, `file:line: <module> includes <header> of <module>; <what to do>`,
and exits 1 when there is any; prints a one-line summary and exits 0 otherwise.

Usage: check_layering.py [--root DIR] [--print-uses]
  --root DIR     the source tree to check (default: the one this script is in)
  --print-uses   print each module's actual direct uses instead (to write the table's cells)
"""

import argparse
import fnmatch
import os
import re
import sys

ARCHITECTURE_DOC = os.path.join("docs", "ARCHITECTURE.md")
TABLE_HEADING = "## Modules"
SCANNED_FOLDERS = ("src", "cuda")
SOURCE_SUFFIXES = (".hpp", ".cpp", ".h", ".cu", ".cuh", ".cpp.in")
# Where the compiler looks for `#include "..."` after the including file's folder: the
# include_directories of the meson files (inc; cuda_own_inc; the host grid's, for tests/cuda).
INCLUDE_FOLDERS = ("src", "cuda", "cuda/host_emulator", "cuda/host_emulator/include")
NO_USES = "nothing"
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
BACKTICKED = re.compile(r"`([^`]+)`")
SUBDIR_CALL = re.compile(r"^\s*subdir\('([^']+)'\)", re.MULTILINE)
HOW_TO_FIX_UPWARD = ("move what it needs down to a module below, or invert the dependency "
                     "(an interface below, its implementation above)")


class TableError(Exception):
    """The module table cannot be read: names the doc's line and what is wrong."""


class Module:
    def __init__(self, name, rank, patterns, uses, line):
        self.name = name
        self.rank = rank  # 0 = the lowest
        self.patterns = patterns
        self.uses = uses
        self.line = line


def split_row(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def read_modules(root):
    """The module table's rows, lowest first. Raises TableError."""
    doc_path = os.path.join(root, ARCHITECTURE_DOC)
    with open(doc_path, encoding="utf-8") as doc:
        lines = doc.read().split("\n")
    try:
        start = lines.index(TABLE_HEADING)
    except ValueError:
        raise TableError(f"{ARCHITECTURE_DOC}: no '{TABLE_HEADING}' section") from None
    table_start = next((i for i in range(start, len(lines)) if lines[i].startswith("|")), None)
    if table_start is None:
        raise TableError(f"{ARCHITECTURE_DOC}:{start + 1}: the '{TABLE_HEADING}' section has "
                         "no table")
    header = [cell.lower() for cell in split_row(lines[table_start])]
    for column in ("module", "files", "uses"):
        if column not in header:
            raise TableError(f"{ARCHITECTURE_DOC}:{table_start + 1}: the module table has no "
                             f"'{column}' column")
    name_at, files_at, uses_at = (header.index(c) for c in ("module", "files", "uses"))
    modules = []
    index = table_start + 2  # after the header and its |---| line
    while index < len(lines) and lines[index].startswith("|"):
        cells = split_row(lines[index])
        line_number = index + 1
        if len(cells) != len(header):
            raise TableError(f"{ARCHITECTURE_DOC}:{line_number}: {len(cells)} cells, the header "
                             f"has {len(header)}")
        name = cells[name_at].strip("`")
        patterns = BACKTICKED.findall(cells[files_at])
        if not patterns:
            raise TableError(f"{ARCHITECTURE_DOC}:{line_number}: module {name} names no files "
                             "(backticked folders or globs)")
        uses_cell = cells[uses_at].replace("`", "").strip()
        uses = [] if uses_cell == NO_USES else [u.strip() for u in uses_cell.split(",")]
        modules.append(Module(name, len(modules), patterns, uses, line_number))
        index += 1
    by_name = {}
    for module in modules:
        if module.name in by_name:
            raise TableError(f"{ARCHITECTURE_DOC}:{module.line}: module {module.name} has two rows")
        by_name[module.name] = module
    for module in modules:
        for used in module.uses:
            if used not in by_name:
                raise TableError(f"{ARCHITECTURE_DOC}:{module.line}: module {module.name} uses "
                                 f"'{used}', which is no module of the table")
    return modules


def is_folder(pattern):
    return pattern.endswith("/")


def module_of(path, modules):
    """The module whose files cover `path` (relative, with '/'), or None. The most specific
    pattern wins: a glob over a folder, a longer folder over a shorter one."""
    best, best_key = None, None
    for module in modules:
        for pattern in module.patterns:
            if is_folder(pattern):
                matches, key = path.startswith(pattern), (0, len(pattern))
            else:
                matches, key = fnmatch.fnmatchcase(path, pattern), (1, len(pattern))
            if matches and (best_key is None or key > best_key):
                best, best_key = module, key
    return best


def source_files(root):
    for folder in SCANNED_FOLDERS:
        for directory, subfolders, files in os.walk(os.path.join(root, folder)):
            subfolders.sort()
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")


def resolve_include(root, including, header):
    """The file `#include "header"` in `including` names, relative to root. A header that is not
    in the tree (generated by the build next to its sources) is placed by its folder."""
    own_folder = os.path.dirname(including)
    candidates = [os.path.join(own_folder, header)] + [os.path.join(f, header)
                                                       for f in INCLUDE_FOLDERS]
    for candidate in candidates:
        if os.path.isfile(os.path.join(root, candidate)):
            return os.path.normpath(candidate).replace(os.sep, "/")
    first_folder = header.split("/")[0]
    for folder in INCLUDE_FOLDERS:
        if "/" in header and os.path.isdir(os.path.join(root, folder, first_folder)):
            return os.path.normpath(os.path.join(folder, header)).replace(os.sep, "/")
    return os.path.normpath(os.path.join(own_folder, header)).replace(os.sep, "/")


def includes_of(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as source:
        for line_number, line in enumerate(source, start=1):
            match = INCLUDE_LINE.match(line)
            if match:
                yield line_number, match.group(1)


def check_includes(root, modules, actual_uses):
    """Problems of the includes; fills actual_uses[module name] with the modules it includes."""
    by_name = {m.name: m for m in modules}
    problems = []
    for path in source_files(root):
        module = module_of(path, modules)
        if module is None:
            problems.append(f"{path}: belongs to no module of {ARCHITECTURE_DOC}'s module table; "
                            "add its folder (or the file) to a row's files")
            continue
        for line_number, header in includes_of(root, path):
            target_path = resolve_include(root, path, header)
            target = module_of(target_path, modules)
            where = f"{path}:{line_number}: {module.name} includes {header}"
            if target is None:
                problems.append(f"{where}, which no module's files cover; add its folder to a "
                                f"row of {ARCHITECTURE_DOC}'s module table")
                continue
            if target is module:
                continue
            actual_uses.setdefault(module.name, set()).add(target.name)
            if target.rank > module.rank:
                problems.append(f"{where} of {target.name}, a module above it; "
                                f"{HOW_TO_FIX_UPWARD}")
            elif target.name not in module.uses:
                problems.append(f"{where} of {target.name}, which its row in {ARCHITECTURE_DOC} "
                                f"does not list under uses; add {target.name} there if "
                                f"{module.name} should use it")
    for module in modules:
        for used in module.uses:
            if by_name[used].rank > module.rank:
                problems.append(f"{ARCHITECTURE_DOC}:{module.line}: {module.name} lists {used} "
                                f"under uses, a module above it")
    return problems


def check_build_order(root, modules):
    """The top-level meson.build enters the modules' folders in the table's order."""
    folder_rank = {}
    for module in modules:
        for pattern in module.patterns:
            if is_folder(pattern):
                folder_rank.setdefault(pattern.rstrip("/"), module)
    with open(os.path.join(root, "meson.build"), encoding="utf-8") as build_file:
        entered = [f for f in SUBDIR_CALL.findall(build_file.read()) if f in folder_rank]
    problems = []
    highest = None  # the folder of the highest module entered so far
    for folder in entered:
        if highest is not None and folder_rank[folder].rank < folder_rank[highest].rank:
            problems.append(f"meson.build: subdir('{folder}') ({folder_rank[folder].name}) comes "
                            f"after subdir('{highest}') ({folder_rank[highest].name}), against "
                            f"the order of {ARCHITECTURE_DOC}'s module table; build them in the "
                            "table's order")
        if highest is None or folder_rank[folder].rank > folder_rank[highest].rank:
            highest = folder
    return problems


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    this_tree = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=this_tree)
    parser.add_argument("--print-uses", action="store_true")
    args = parser.parse_args(argv)
    try:
        modules = read_modules(args.root)
    except (TableError, OSError) as error:
        print(f"check_layering: {error}", file=sys.stderr)
        return 1
    actual_uses = {}
    problems = check_includes(args.root, modules, actual_uses) + check_build_order(args.root,
                                                                                   modules)
    if args.print_uses:
        for module in modules:
            uses = sorted(actual_uses.get(module.name, ()), key=lambda n: next(
                m.rank for m in modules if m.name == n))
            print(f"{module.name}: {', '.join(uses) or NO_USES}")
        return 0
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_layering: {len(problems)} problem(s); the layering is "
              f"{ARCHITECTURE_DOC}'s module table", file=sys.stderr)
        return 1
    print(f"check_layering: {len(modules)} modules, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
