#!/usr/bin/env python3
"""Writes the first N samples of an IDX images/labels pair (e.g. Fashion-MNIST) as a CSV file for
data.format: csv's tests: a header line, then per row the label and the pixels as numbers in
[0, 1] (3 decimals).

  make_csv.py IMAGES LABELS OUT.csv N
"""
import gzip
import struct
import sys


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = struct.unpack(">I", data[:4])[0] & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def main():
    images, labels, out, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    (n, rows, cols), pixels = read_idx(images)
    _, label_bytes = read_idx(labels)
    plane = rows * cols
    with open(out, "w") as f:
        f.write("label," + ",".join("p{}".format(i) for i in range(plane)) + "\n")
        for i in range(min(count, n)):
            values = pixels[i * plane:(i + 1) * plane]
            f.write("{},".format(label_bytes[i]) +
                    ",".join("{:.3f}".format(v / 255) for v in values) + "\n")


if __name__ == "__main__":
    main()
