#!/usr/bin/env python3
"""Writes a copy of a dl-train checkpoint or model file with one section changed, its checksums
made valid again (docs/CHECKPOINT_FORMAT.md), so that tests can give the commands a file that
only dl-train's own checks can refuse.

Usage:
  edit_checkpoint.py IN OUT metadata KEY_HEX VALUE_HEX   one metadata entry added (key and value
                                                        as hexadecimal bytes: any bytes at all)
  edit_checkpoint.py IN OUT nan-parameters               every parameter NaN
"""
import struct
import sys
import zlib


def read_string(payload, at):
    (length,) = struct.unpack_from("<Q", payload, at)
    return payload[at + 8 : at + 8 + length], at + 8 + length


def string(data):
    return struct.pack("<Q", len(data)) + data


def with_entry(meta, key, value):
    at = read_string(meta, 0)[1] + 8  # kind, config hash
    at = read_string(meta, at)[1] + 24  # network signature, epoch, round, iteration
    (count,) = struct.unpack_from("<Q", meta, at)
    return meta[:at] + struct.pack("<Q", count + 1) + meta[at + 8 :] + string(key) + string(value)


def rewrite(source, target, edit):
    """Copies SOURCE to TARGET with each section's payload passed through edit(tag, payload)."""
    data = open(source, "rb").read()
    (sections,) = struct.unpack_from("<I", data, 12)
    out, at = bytearray(data[:20]), 20
    for _ in range(sections):
        tag, (length,) = data[at : at + 4], struct.unpack_from("<Q", data, at + 4)
        payload = edit(tag, data[at + 16 : at + 16 + length])
        at += 16 + length
        head = tag + struct.pack("<Q", len(payload))
        out += head + struct.pack("<I", zlib.crc32(head + payload)) + payload
    open(target, "wb").write(out)


def main(source, target, what, *values):
    if what == "metadata":
        key, value = bytes.fromhex(values[0]), bytes.fromhex(values[1])
        rewrite(source, target, lambda tag, p: with_entry(p, key, value) if tag == b"META" else p)
    elif what == "nan-parameters":
        nan = struct.pack("<f", float("nan"))
        rewrite(source, target, lambda tag, p: nan * (len(p) // 4) if tag == b"PARM" else p)
    else:
        sys.exit(f"edit_checkpoint.py: unknown edit {what!r}; see the usage in its header")


if __name__ == "__main__":
    main(*sys.argv[1:])
