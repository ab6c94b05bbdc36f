#!/usr/bin/env python3
"""Tests of scripts/check_layering.py on a copy of the source tree: the clean copy passes, and
each planted fault (an upward include, an include of a module the row does not list, a file of
no module, a row using a module above, meson.build entering folders out of order) fails, naming
the file and line.

Usage: test_check_layering.py   (DL_SOURCE_DIR: the source tree; default: two folders up)
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("DL_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(SOURCE_DIR, "scripts", "check_layering.py")
# What the checker reads: the table, the build order and the sources.
COPIED_FILES = ("docs/ARCHITECTURE.md", "meson.build")
COPIED_FOLDERS = ("src", "cuda")
EXIT_PROBLEMS = 1


def plant_line(path, after_line, text):
    """Inserts `text` as a new line after line `after_line` of `path`; returns its line number."""
    with open(path, encoding="utf-8") as source:
        lines = source.read().split("\n")
    lines.insert(after_line, text)
    with open(path, "w", encoding="utf-8") as source:
        source.write("\n".join(lines))
    return after_line + 1


def first_include_line(path):
    """The number of the first `#include` line of `path` (a planted one goes right after it)."""
    with open(path, encoding="utf-8") as source:
        for number, line in enumerate(source, start=1):
            if line.startswith("#include"):
                return number
    raise AssertionError(f"{path} has no #include")


class CheckLayeringTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.mkdtemp(prefix="check_layering_")
        self.root = os.path.join(self.scratch, "tree")
        for folder in COPIED_FOLDERS:
            shutil.copytree(os.path.join(SOURCE_DIR, folder), os.path.join(self.root, folder),
                            symlinks=True)
        for name in COPIED_FILES:
            os.makedirs(os.path.dirname(os.path.join(self.root, name)), exist_ok=True)
            shutil.copy(os.path.join(SOURCE_DIR, name), os.path.join(self.root, name))

    def tearDown(self):
        shutil.rmtree(self.scratch)

    def run_checker(self):
        result = subprocess.run([sys.executable, CHECKER, "--root", self.root],
                                capture_output=True, text=True, check=False)
        return result.returncode, result.stdout, result.stderr

    def path(self, relative):
        return os.path.join(self.root, relative)

    def plant_include(self, relative, header):
        return plant_line(self.path(relative), first_include_line(self.path(relative)),
                          f'#include "{header}"')

    def test_clean_tree_passes(self):
        status, out, err = self.run_checker()
        self.assertEqual(status, 0, out + err)
        self.assertIn("every include points down", out)

    def test_upward_include_fails_naming_file_and_line(self):
        line = self.plant_include("src/core/hash.hpp", "train/trainer.hpp")
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn(f"src/core/hash.hpp:{line}: core includes train/trainer.hpp of train, "
                      "a module above it;", out)
        self.assertEqual(len(out.strip().split("\n")), 1, out)

    def test_upward_include_into_second_library_of_a_folder_fails(self):
        # The config fields and the config schema share src/config/: the fields sit below nn,
        # the schema above it.
        line = self.plant_include("src/config/config.cpp", "config/config_loader.hpp")
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn(f"src/config/config.cpp:{line}: config-fields includes "
                      "config/config_loader.hpp of config-schema, a module above it;", out)

    def test_relative_include_of_an_upper_module_fails(self):
        # cuda/ includes its own headers by file name; from a file of src/ that name resolves
        # only through the cuda/ include folder.
        line = self.plant_include("src/nn/model.cpp", "cuda_backend.hpp")
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn(f"src/nn/model.cpp:{line}: nn includes cuda_backend.hpp of cuda, "
                      "a module above it;", out)

    def test_include_of_a_lower_module_the_row_does_not_list_fails(self):
        line = self.plant_include("src/io/checkpoint.cpp", "nn/model.hpp")
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn(f"src/io/checkpoint.cpp:{line}: io includes nn/model.hpp of nn, which its "
                      "row in docs/ARCHITECTURE.md does not list under uses;", out)

    def test_file_of_no_module_fails(self):
        os.makedirs(self.path("src/extra"))
        with open(self.path("src/extra/thing.hpp"), "w", encoding="utf-8") as header:
            header.write("#pragma once\n")
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn("src/extra/thing.hpp: belongs to no module", out)

    def test_row_using_a_module_above_fails(self):
        doc = self.path("docs/ARCHITECTURE.md")
        with open(doc, encoding="utf-8") as source:
            text = source.read()
        row = re.search(r"^\| `io` \| `src/io/` \| core, file-access \|", text, re.MULTILINE)
        self.assertIsNotNone(row, "the io row of the module table changed; update this test")
        line = text[:row.start()].count("\n") + 1
        with open(doc, "w", encoding="utf-8") as source:
            source.write(text.replace(row.group(0),
                                      "| `io` | `src/io/` | core, file-access, train |"))
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn(f"docs/ARCHITECTURE.md:{line}: io lists train under uses, a module above it",
                      out)

    def test_meson_build_out_of_order_fails(self):
        build = self.path("meson.build")
        with open(build, encoding="utf-8") as source:
            text = source.read()
        swapped = text.replace("subdir('src/nn')\n", "").replace(
            "subdir('src/optim')\n", "subdir('src/optim')\nsubdir('src/nn')\n")
        self.assertNotEqual(swapped, text, "meson.build no longer enters src/nn; update this test")
        with open(build, "w", encoding="utf-8") as source:
            source.write(swapped)
        status, out, _ = self.run_checker()
        self.assertEqual(status, EXIT_PROBLEMS)
        self.assertIn("meson.build: subdir('src/nn') (nn) comes after subdir('src/optim') (optim)",
                      out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
