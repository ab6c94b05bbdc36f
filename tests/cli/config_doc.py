#!/usr/bin/env python3
"""docs/CONFIG.md against the built binary: the key tables ("| key | type | default | ...") must
name every key `dl-train validate --json` resolves, each documented default must be the one the
resolved config holds, and each documented list of values (`a` \\| `b`) must be the list the
binary accepts (read from its "use one of: ..." error). A key added to the schema, a default
changed in src/config/config.hpp or an enum value added without its row fails here.

  config_doc.py   (env: DL_TRAIN, DL_SOURCE_DIR) exits 1 naming every mismatch
"""
import json
import os
import re
import subprocess
import sys
import tempfile

DL_TRAIN = os.environ["DL_TRAIN"]
DOC = os.path.join(os.environ["DL_SOURCE_DIR"], "docs", "CONFIG.md")

# Every layer kind once, default names kept (a set name would differ from `<type><index>`).
IMAGE_CONFIG = """
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {nOut: 4}
  - batchNormalization: {}
  - activation: {}
  - subsampling: {kernelSize: 2, stride: 2}
  - convolution: {nOut: 4, kernelSize: 1}
  - add: {inputs: [subsampling3, convolution4]}
  - concat: {inputs: [add5, convolution4]}
  - dropout: {}
  - globalPooling: {}
  - dense: {nOut: 8}
  - output: {nOut: 10}
"""
CIFAR_INPUT = "inputType={convolutionalFlat: {height: 32, width: 32, channels: 3}}"
# The --set arguments that select each data format, so that each format's keys are resolved.
FORMATS = {
    "idx": [],
    "cifar10": ["data.format=cifar10", CIFAR_INPUT],
    "cifar100": ["data.format=cifar100", CIFAR_INPUT, "data.numClasses=100",
                 "layers.10.nOut=100"],
    "imagefolder": ["data.format=imagefolder"],
    "csv": ["data.format=csv", "inputType={feedForward: {size: 784}}",
            "layers=[{dense: {nOut: 8}}, {output: {nOut: 10}}]"],
}

errors = {}  # as a dict: in order, each once (several configs meet the same key)


def add_error(text):
    errors[text] = True


def validate(config, sets):
    args = [DL_TRAIN, "validate", "--config-only", "--json", "--config", config]
    for s in sets:
        args += ["--set", s]
    return subprocess.run(args, capture_output=True, text=True)


def doc_tables():
    """{section: {key: (type cell, default cell)}}; "" is the top level."""
    tables, section, header = {}, None, None
    for line in open(DOC, encoding="utf-8"):
        heading = re.match(r"^## (?:`(\w+)`|Top level)", line)
        if heading:
            section, header = heading.group(1) or "", None
        elif line.startswith("#"):
            section = section if line.startswith("###") else None
        if section is None or not line.startswith("|"):
            header = None if not line.startswith("|") else header
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if header is None:
            header = cells
            continue
        if header[:3] != ["key", "type", "default"] or set(cells[0]) <= {"-", " "}:
            continue
        tables.setdefault(section, {})[cells[0].strip("`")] = (cells[1], cells[2])
    return tables


def simple_default(cell):
    """The value of a default cell that is one `value` (with an optional note), else None."""
    m = re.fullmatch(r"(?:unset \()?`([^`]*)`\)?(?: \([^)]*\))?", cell) or \
        re.fullmatch(r"(unset)", cell)
    if not m or "<" in cell:
        return None
    text = m.group(1)
    if text in ("~", "unset"):
        return ("value", None)
    try:
        return ("value", json.loads(text.replace("1e4", "10000")))
    except ValueError:
        pass
    sizes = re.fullmatch(r"(\d+)GiB", text)
    return ("value", int(sizes.group(1)) << 30 if sizes else text)


def listed_values(cell):
    """The values of a type cell that lists them (`a` \\| `b`, `a`, `b`, `a` or `b`), else None."""
    parts = [p.strip() for p in re.split(r"\\\||,| or ", cell)]
    if len(parts) < 2 or not all(re.fullmatch(r"`[^`]+`", p) for p in parts):
        return None
    return [p.strip("`") for p in parts]


def accepted_values(config, sets, path):
    result = validate(config, sets + [path + "=zzz"])
    m = re.search(r"use one of: (.*)$", result.stderr.strip())
    return m.group(1).split(", ") if m else None


def same(doc_value, resolved):
    if isinstance(doc_value, (int, float)) and isinstance(resolved, (int, float)):
        return abs(doc_value - resolved) <= 1e-12 * max(1.0, abs(doc_value))
    return doc_value == resolved


def check_key(section, key, cells, resolved, config, sets, path):
    doc_type, doc_default = cells
    default = simple_default(doc_default)
    overridden = any(s.split("=")[0] in (path, path.split(".")[0]) for s in sets)
    if default is not None and not overridden and not same(default[1], resolved):
        add_error(f"{path}: CONFIG.md says the default is {doc_default}, "
                      f"validate resolves {json.dumps(resolved)}")
    listed = listed_values(doc_type)
    if listed is not None:
        accepted = accepted_values(config, sets, path)
        if accepted is None or sorted(accepted) != sorted(listed):
            add_error(f"{path}: CONFIG.md lists {listed}, the binary accepts {accepted}")


def check_section(tables, section, values, config, sets, prefix, documented_seen):
    table = tables.get(section, {})
    for key, value in values.items():
        path = prefix + key
        if key not in table:
            add_error(f"{path}: resolved by validate but has no row in CONFIG.md's "
                          f"`{section or 'Top level'}` table")
            continue
        documented_seen.add((section, key))
        if isinstance(value, dict) and section == "":
            continue
        check_key(section, key, table[key], value, config, sets, path)


def check_unresolved(tables, seen, config):
    """A documented key that no dump holds (one written only away from its default) must still
    be a key: set to its documented default, the binary accepts it."""
    for section, table in tables.items():
        for key, (_, doc_default) in table.items():
            if (section, key) in seen:
                continue
            default = simple_default(doc_default)
            path = ("layers.0." if section == "layers" else section + ".") + key
            value = json.dumps(default[1]) if default else "~"
            result = validate(config, [f"{path}={value}"])
            if result.returncode != 0:
                add_error(f"{path}: documented in CONFIG.md, but validate refuses it set to its "
                          f"documented default: {result.stderr.strip()}")
            else:
                seen.add((section, key))


def main():
    tables = doc_tables()
    seen = set()
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "config.yaml")
        with open(config, "w") as f:
            f.write(IMAGE_CONFIG)
        for fmt, sets in FORMATS.items():
            result = validate(config, sets)
            if result.returncode != 0:
                add_error(f"validate for data.format {fmt} failed: {result.stderr.strip()}")
                continue
            resolved = json.loads(result.stdout)["resolved"]
            check_section(tables, "", resolved, config, sets, "", seen)
            for section, values in resolved.items():
                if isinstance(values, dict) and section != "inputType":
                    check_section(tables, section, values, config, sets, section + ".", seen)
            for i, layer in enumerate(resolved["layers"]):
                (kind, keys), = layer.items()
                check_section(tables, "layers", keys, config, sets, f"layers.{i}.", seen)
        check_unresolved(tables, seen, config)
    for e in errors:
        print("FAIL:", e)
    print(f"{len(seen)} documented keys checked, {len(errors)} mismatches")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
