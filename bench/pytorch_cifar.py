#!/usr/bin/python3
"""PyTorch peer of configs/cifar10.yaml: the seed's Keras CNN with its recipe, trained on the binary
CIFAR-10 batches of a folder, with the test accuracy after every epoch.

Network (as the seed's tf.keras model): Conv2D 32 3x3 relu "same" -> MaxPool 2x2 -> Conv2D 64 3x3
relu "same" -> MaxPool 2x2 -> Flatten -> Dense 64 relu -> Dense 10 softmax; 282,250 parameters.
Recipe: Keras's glorot_uniform weights and zero biases, Adam (lr 1e-3, betas 0.9/0.999, epsilon
1e-7: Keras's; PyTorch's Adam puts epsilon outside the bias correction, Keras and dl-train inside,
which differs only in the first steps), sparse categorical cross-entropy, batch 32, shuffled every
epoch, pixels as byte / 255. Reads data_batch_1.bin .. data_batch_5.bin and test_batch.bin
(scripts/fetch_cifar10.sh, or tests/tools/make_cifar_dataset for generated ones).

One process, --threads intra-op threads. Run with /usr/bin/python3 (Debian's python3-torch).
Prints one JSON line per epoch, then a summary line.
"""

import os

# Must be set before numpy loads OpenBLAS.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]
TEST_FILE = "test_batch.bin"
LABEL_BYTES = 1
CHANNELS, SIDE = 3, 32
IMAGE_BYTES = CHANNELS * SIDE * SIDE
PIXEL_MAX = 255.0
NUM_CLASSES = 10

SEED = 123
BATCH_SIZE = 32
LEARNING_RATE = 1e-3
BETAS = (0.9, 0.999)
EPSILON = 1e-7
EVAL_BATCH_SIZE = 1000


def read_batches(folder, names, limit):
    """(images float32 [N,3,32,32] in [0,1], labels int64 [N]) of the files in order."""
    records = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            raw = np.fromfile(path, dtype=np.uint8)
        except FileNotFoundError:
            sys.exit(f"{path}: not found; run scripts/fetch_cifar10.sh or pass --data-dir")
        if raw.size % (LABEL_BYTES + IMAGE_BYTES) != 0:
            sys.exit(f"{path}: {raw.size} bytes is not a whole number of CIFAR-10 records")
        records.append(raw.reshape(-1, LABEL_BYTES + IMAGE_BYTES))
    data = np.concatenate(records)
    if limit > 0:
        data = data[:limit]
    images = data[:, LABEL_BYTES:].astype(np.float32) / PIXEL_MAX
    labels = data[:, 0].astype(np.int64)
    return (torch.from_numpy(images).reshape(-1, CHANNELS, SIDE, SIDE),
            torch.from_numpy(labels))


class KerasCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(CHANNELS, 32, 3, padding="same")
        self.conv2 = torch.nn.Conv2d(32, 64, 3, padding="same")
        self.dense = torch.nn.Linear(64 * (SIDE // 4) ** 2, 64)
        self.output = torch.nn.Linear(64, NUM_CLASSES)
        with torch.no_grad():
            for module in (self.conv1, self.conv2, self.dense, self.output):
                fan_out, fan_in = module.weight.shape[0], module.weight.shape[1]
                receptive = math.prod(module.weight.shape[2:])
                limit = math.sqrt(6.0 / ((fan_in + fan_out) * receptive))  # glorot_uniform
                module.weight.uniform_(-limit, limit)
                module.bias.zero_()

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.dense(torch.flatten(x, 1)))
        return F.log_softmax(self.output(x), dim=1)


def evaluate(model, x, y):
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for first in range(0, x.shape[0], EVAL_BATCH_SIZE):
            out = model(x[first:first + EVAL_BATCH_SIZE])
            target = y[first:first + EVAL_BATCH_SIZE]
            loss += float(F.nll_loss(out, target, reduction="sum"))
            correct += int((out.argmax(dim=1) == target).sum())
    model.train()
    return correct / x.shape[0], loss / x.shape[0]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data/cifar-10-batches-bin")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--train-limit", type=int, default=0, help="first N training images")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help="samples per step; N synchronous workers of 32 step as one of N*32 "
                             "(the mean gradient over all of them, as an all-reduce gives)")
    args = parser.parse_args()
    if args.threads < 1 or args.epochs < 1 or args.train_limit < 0 or args.batch_size < 1:
        parser.error("--threads, --epochs and --batch-size must be at least 1, --train-limit at "
                     "least 0")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(SEED)
    train_x, train_y = read_batches(args.data_dir, TRAIN_FILES, args.train_limit)
    test_x, test_y = read_batches(args.data_dir, [TEST_FILE], 0)
    model = KerasCnn()
    parameters = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, betas=BETAS, eps=EPSILON)
    shuffle = torch.Generator().manual_seed(SEED)
    seconds = 0.0
    for epoch in range(args.epochs):
        start = time.perf_counter()
        order = torch.randperm(train_x.shape[0], generator=shuffle)
        for first in range(0, train_x.shape[0], args.batch_size):
            index = order[first:first + args.batch_size]
            optimizer.zero_grad(set_to_none=True)
            F.nll_loss(model(train_x[index]), train_y[index]).backward()
            optimizer.step()
        seconds += time.perf_counter() - start
        test_accuracy, test_loss = evaluate(model, test_x, test_y)
        print(json.dumps({"framework": "pytorch", "epoch": epoch,
                          "test_accuracy": round(test_accuracy, 4),
                          "test_loss": round(test_loss, 6)}), flush=True)
    print(json.dumps({"framework": "pytorch", "parameters": parameters, "epochs": args.epochs,
                      "train_images": train_x.shape[0], "train_seconds": round(seconds, 3),
                      "train_images_per_second": round(
                          args.epochs * train_x.shape[0] / seconds, 1)}))


if __name__ == "__main__":
    main()
