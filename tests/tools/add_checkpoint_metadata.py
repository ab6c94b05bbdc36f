#!/usr/bin/env python3
"""Writes a copy of a dl-train checkpoint or model file with one metadata entry added, its
checksums made valid again (docs/CHECKPOINT_FORMAT.md), so that tests can give the commands a
file whose strings hold any bytes.

Usage: add_checkpoint_metadata.py IN OUT KEY_HEX VALUE_HEX (key and value as hexadecimal bytes).
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


def main(source, target, key_hex, value_hex):
    data = open(source, "rb").read()
    (sections,) = struct.unpack_from("<I", data, 12)
    out, at = bytearray(data[:20]), 20
    for _ in range(sections):
        tag, (length,) = data[at : at + 4], struct.unpack_from("<Q", data, at + 4)
        payload = data[at + 16 : at + 16 + length]
        at += 16 + length
        if tag == b"META":
            payload = with_entry(payload, bytes.fromhex(key_hex), bytes.fromhex(value_hex))
        head = tag + struct.pack("<Q", len(payload))
        out += head + struct.pack("<I", zlib.crc32(head + payload)) + payload
    open(target, "wb").write(out)


if __name__ == "__main__":
    main(*sys.argv[1:5])
