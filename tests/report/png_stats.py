#!/usr/bin/env python3
"""Decodes an 8-bit RGB/RGBA PNG (as headless Chromium writes screenshots) with zlib alone and
prints what a check needs: width, height, the share of pixels that are not near-white, and the
number of distinct colours (quantized). A blank page is all white: share 0, one colour.

  png_stats.py FILE   prints: width height non_white_share colours
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, width = 8, b"", 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind = data[at + 4:at + 8]
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace != 0:
                raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(line)
        previous = line
    return width, height, channels, rows


def main(path):
    width, height, channels, rows = decode(path)
    non_white, colours = 0, set()
    for line in rows:
        for x in range(0, len(line), channels):
            r, g, b = line[x], line[x + 1], line[x + 2]
            if min(r, g, b) < 235:
                non_white += 1
            colours.add((r >> 4, g >> 4, b >> 4))
    print(f"{width} {height} {non_white / (width * height):.4f} {len(colours)}")


if __name__ == "__main__":
    main(sys.argv[1])
