#!/usr/bin/env python3
"""Writes Fashion-MNIST (IDX files, e.g. /usr/share/datasets/fashion-mnist) as CIFAR-10 binary
batches: each 28x28 image zero-padded to 32x32 and given colour, its grey plane scaled per
channel by a tint drawn per image, so that the three channel planes differ as a photo's do.
data_batch_1.bin .. data_batch_5.bin split the first TRAIN training images, test_batch.bin holds
the first TEST test images; one record = label byte + 3072 pixel bytes (R, G, B planes).

  fashion_to_cifar.py FASHION_DIR OUT_DIR [TRAIN=60000] [TEST=10000]
"""
import gzip
import os
import random
import struct
import sys

SIDE_IN, SIDE_OUT, CHANNELS = 28, 32, 3
PAD = (SIDE_OUT - SIDE_IN) // 2
BATCHES = 5
SEED = 123
TINT_LOW = 0.5  # each channel keeps 50-100 % of the grey value


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = struct.unpack(">I", data[:4])[0] & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def records(images, labels, count, rng):
    (n, rows, cols), pixels = read_idx(images)
    _, label_bytes = read_idx(labels)
    if (rows, cols) != (SIDE_IN, SIDE_IN):
        sys.exit(f"{images}: {rows}x{cols} images, expected {SIDE_IN}x{SIDE_IN}")
    plane = SIDE_IN * SIDE_IN
    out = bytearray()
    for i in range(min(count, n)):
        grey = pixels[i * plane:(i + 1) * plane]
        out.append(label_bytes[i])
        for _ in range(CHANNELS):
            tint = rng.uniform(TINT_LOW, 1.0)
            padded = bytearray(SIDE_OUT * SIDE_OUT)
            for r in range(SIDE_IN):
                row = grey[r * SIDE_IN:(r + 1) * SIDE_IN]
                start = (r + PAD) * SIDE_OUT + PAD
                padded[start:start + SIDE_IN] = bytes(int(v * tint) for v in row)
            out += padded
    return out, min(count, n)


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__)
    source, target = sys.argv[1], sys.argv[2]
    train = int(sys.argv[3]) if len(sys.argv) > 3 else 60000
    test = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    rng = random.Random(SEED)
    os.makedirs(target, exist_ok=True)
    data, n = records(os.path.join(source, "train-images-idx3-ubyte.gz"),
                      os.path.join(source, "train-labels-idx1-ubyte.gz"), train, rng)
    record = 1 + CHANNELS * SIDE_OUT * SIDE_OUT
    per_batch = -(-n // BATCHES)
    for b in range(BATCHES):
        with open(os.path.join(target, f"data_batch_{b + 1}.bin"), "wb") as f:
            f.write(data[b * per_batch * record:min(n, (b + 1) * per_batch) * record])
    data, m = records(os.path.join(source, "t10k-images-idx3-ubyte.gz"),
                      os.path.join(source, "t10k-labels-idx1-ubyte.gz"), test, rng)
    with open(os.path.join(target, "test_batch.bin"), "wb") as f:
        f.write(data)
    print(f"fashion_to_cifar.py: wrote {n} training and {m} test images to {target}")


if __name__ == "__main__":
    main()
