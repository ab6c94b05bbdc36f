#!/usr/bin/env python3
"""Writes the first N images of an IDX images/labels pair (e.g. Fashion-MNIST) as an image folder:
OUT/<class name>/<index>.<ext>, one subfolder per class, for data.format: imagefolder's tests and
benchmark.

  make_image_folder.py IMAGES LABELS OUT N [--format png|jpeg|mixed] [--size S] [--rgb]

--size S resizes each 28x28 image to S x S (Pillow's bilinear); --rgb writes 3-channel images
(the gray value in each channel); mixed alternates PNG and JPEG.
"""
import argparse
import gzip
import os
import struct

from PIL import Image

FASHION_CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                   "Sneaker", "Bag", "Ankle_boot"]
JPEG_QUALITY = 95


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("images")
    parser.add_argument("labels")
    parser.add_argument("out")
    parser.add_argument("count", type=int)
    parser.add_argument("--format", choices=["png", "jpeg", "mixed"], default="png")
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--rgb", action="store_true")
    args = parser.parse_args()
    (n, rows, cols), pixels = read_idx(args.images)
    _, labels = read_idx(args.labels)
    for name in FASHION_CLASSES:
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
    plane = rows * cols
    for i in range(min(args.count, n)):
        image = Image.frombytes("L", (cols, rows), pixels[i * plane:(i + 1) * plane])
        if args.size:
            image = image.resize((args.size, args.size), Image.BILINEAR)
        if args.rgb:
            image = image.convert("RGB")
        jpeg = args.format == "jpeg" or (args.format == "mixed" and i % 2 == 1)
        path = os.path.join(args.out, FASHION_CLASSES[labels[i]],
                            "{:06d}.{}".format(i, "jpg" if jpeg else "png"))
        if jpeg:
            image.save(path, quality=JPEG_QUALITY)
        else:
            image.save(path)


if __name__ == "__main__":
    main()
