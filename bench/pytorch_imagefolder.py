#!/usr/bin/env python3
"""Decodes and fits every image of an image folder with torchvision's ImageFolder and a DataLoader
(the reference for bench/compare_decode.sh): Resize(side) + CenterCrop(side) (dl-train's
resize: centerCrop), grayscale or RGB, to tensors, batches of 128, WORKERS loader processes.
Prints "images SECONDS".

  pytorch_imagefolder.py FOLDER SIDE CHANNELS WORKERS
"""
import sys
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

BATCH = 128


def main():
    folder, side, channels, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    steps = [transforms.Grayscale(1)] if channels == 1 else []
    steps += [transforms.Resize(side), transforms.CenterCrop(side), transforms.ToTensor()]
    start = time.perf_counter()
    data = datasets.ImageFolder(folder, transform=transforms.Compose(steps))
    loader = DataLoader(data, batch_size=BATCH, num_workers=workers)
    images = 0
    for batch, _ in loader:
        images += batch.shape[0]
    print(images, time.perf_counter() - start)


if __name__ == "__main__":
    main()
