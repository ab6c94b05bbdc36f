#!/usr/bin/python3
"""PyTorch peer of configs/resnet20-cifar10.yaml (and of configs/resnet18-cifar10.yaml's network):
He et al. 2016's ResNet-20 for CIFAR with its recipe, trained on the binary CIFAR-10 batches of a
folder, with the test accuracy after every epoch.

Network (as the config): conv 3x3 16 (no bias) - BN - ReLU, three stages of three basic blocks
(16, 32, 64 channels; conv 3x3 - BN - ReLU - conv 3x3 - BN plus the shortcut, then ReLU), the
first block of stages 2 and 3 with stride 2 and a projection shortcut (1x1 conv stride 2 - BN),
global average pooling, Linear 64 -> 10. --network resnet18: the CIFAR ResNet-18 of the same
blocks (conv 3x3 64 stem, four stages of two blocks, 64/128/256/512 channels). He-normal weights (fan in, as dl-train's RELU init),
BN's scale 1 and shift 0, zero Linear bias.
Recipe: SGD with Nesterov momentum 0.9, learning rate 0.1 on a cosine schedule over the run,
weight decay 1e-4 on the weights only (dl-train's l2 with l2Bias 0), batch 128, per-channel
normalization by the training set's mean and standard deviation, 4-pixel zero-padded random
crops and horizontal flips, shuffled every epoch.

--count prints the parameter count (sum of numel over model.parameters()) and exits.
--channels-last runs the convolutions in NHWC (often PyTorch's faster CPU layout).
One process, --threads intra-op threads. Run with /usr/bin/python3 (Debian's python3-torch).
Prints one JSON line per epoch, then a summary line.
"""

# First: the CIFAR-10 batches are read as the Keras seed's peer reads them, and importing it caps
# OpenBLAS's threads before numpy (which torch imports) loads OpenBLAS.
from pytorch_cifar import CHANNELS, NUM_CLASSES, SIDE, TEST_FILE, TRAIN_FILES, read_batches

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# Per network: stage widths and basic blocks per stage.
NETWORKS = {"resnet20": ((16, 32, 64), 3), "resnet18": ((64, 128, 256, 512), 2)}

SEED = 123
BATCH_SIZE = 128
LEARNING_RATE = 0.1
MOMENTUM = 0.9
WEIGHT_DECAY = 1e-4
CROP_PADDING = 4
BN_EPS = 1e-5
BN_MOMENTUM = 0.1  # dl-train's decay 0.9
EVAL_BATCH_SIZE = 500


def conv3x3(cin, cout, stride):
    return torch.nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


def batch_norm(channels):
    return torch.nn.BatchNorm2d(channels, eps=BN_EPS, momentum=BN_MOMENTUM)


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, cout, stride), batch_norm(cout)
        self.conv2, self.bn2 = conv3x3(cout, cout, 1), batch_norm(cout)
        self.shortcut = torch.nn.Identity()
        if stride != 1 or cin != cout:  # the paper's option B: a projection
            self.shortcut = torch.nn.Sequential(
                torch.nn.Conv2d(cin, cout, 1, stride=stride, bias=False), batch_norm(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(torch.nn.Module):
    def __init__(self, widths, blocks_per_stage):
        super().__init__()
        self.stem = torch.nn.Sequential(conv3x3(CHANNELS, widths[0], 1), batch_norm(widths[0]),
                                        torch.nn.ReLU())
        blocks, cin = [], widths[0]
        for stage, width in enumerate(widths):
            for block in range(blocks_per_stage):
                stride = 2 if stage > 0 and block == 0 else 1
                blocks.append(BasicBlock(cin, width, stride))
                cin = width
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(widths[-1], NUM_CLASSES)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                    fan_in = m.weight[0].numel()
                    m.weight.normal_(0.0, math.sqrt(2.0 / fan_in))
                    if m.bias is not None:
                        m.bias.zero_()

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def augment(images, generator):
    """Random 4-pixel zero-padded crops and horizontal flips, drawn per image."""
    n = images.shape[0]
    padded = F.pad(images, (CROP_PADDING,) * 4)
    width = padded.shape[3]
    offsets = torch.arange(SIDE)
    dy = torch.randint(0, 2 * CROP_PADDING + 1, (n,), generator=generator)
    dx = torch.randint(0, 2 * CROP_PADDING + 1, (n,), generator=generator)
    rows = (dy[:, None] + offsets).view(n, 1, SIDE, 1).expand(n, CHANNELS, SIDE, width)
    cols = (dx[:, None] + offsets).view(n, 1, 1, SIDE).expand(n, CHANNELS, SIDE, SIDE)
    cropped = padded.gather(2, rows).gather(3, cols)
    flip = torch.rand(n, generator=generator) < 0.5
    cropped[flip] = cropped[flip].flip(3)
    return cropped


def evaluate(model, x, y, memory_format):
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for first in range(0, x.shape[0], EVAL_BATCH_SIZE):
            batch = x[first:first + EVAL_BATCH_SIZE].contiguous(memory_format=memory_format)
            out = model(batch)
            target = y[first:first + EVAL_BATCH_SIZE]
            loss += float(F.cross_entropy(out, target, reduction="sum"))
            correct += int((out.argmax(dim=1) == target).sum())
    model.train()
    return correct / x.shape[0], loss / x.shape[0]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="data/cifar-10-batches-bin")
    parser.add_argument("--epochs", type=int, default=164)
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--train-limit", type=int, default=0, help="first N training images")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--network", choices=sorted(NETWORKS), default="resnet20")
    parser.add_argument("--count", action="store_true", help="print the parameter count, exit")
    args = parser.parse_args()
    if args.threads < 1 or args.epochs < 1 or args.train_limit < 0 or args.batch_size < 1:
        parser.error("--threads, --epochs and --batch-size must be at least 1, --train-limit at "
                     "least 0")
    return args


def parameter_groups(model):
    """Weight decay on convolution and Linear weights only (dl-train: l2 with l2Bias 0)."""
    decayed = [p for name, p in model.named_parameters() if p.dim() > 1]
    free = [p for name, p in model.named_parameters() if p.dim() <= 1]
    return [{"params": decayed, "weight_decay": WEIGHT_DECAY},
            {"params": free, "weight_decay": 0.0}]


def main():
    args = parse_args()
    torch.manual_seed(SEED)
    model = ResNet(*NETWORKS[args.network])
    parameters = sum(p.numel() for p in model.parameters())
    if args.count:
        print(json.dumps({"framework": "pytorch", "network": args.network,
                          "parameters": parameters}))
        return
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    train_x, train_y = read_batches(args.data_dir, TRAIN_FILES, args.train_limit)
    test_x, test_y = read_batches(args.data_dir, [TEST_FILE], 0)
    mean = train_x.mean(dim=(0, 2, 3), keepdim=True)
    std = train_x.std(dim=(0, 2, 3), keepdim=True)
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std
    steps_per_epoch = math.ceil(train_x.shape[0] / args.batch_size)
    optimizer = torch.optim.SGD(parameter_groups(model), lr=LEARNING_RATE, momentum=MOMENTUM,
                                nesterov=True)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer,
                                                          args.epochs * steps_per_epoch)
    draws = torch.Generator().manual_seed(SEED)
    seconds = 0.0
    for epoch in range(args.epochs):
        start = time.perf_counter()
        order = torch.randperm(train_x.shape[0], generator=draws)
        for first in range(0, train_x.shape[0], args.batch_size):
            index = order[first:first + args.batch_size]
            batch = augment(train_x[index], draws).contiguous(memory_format=memory_format)
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(batch), train_y[index]).backward()
            optimizer.step()
            schedule.step()
        seconds += time.perf_counter() - start
        test_accuracy, test_loss = evaluate(model, test_x, test_y, memory_format)
        print(json.dumps({"framework": "pytorch", "epoch": epoch,
                          "test_accuracy": round(test_accuracy, 4),
                          "test_loss": round(test_loss, 6)}), flush=True)
    print(json.dumps({"framework": "pytorch", "parameters": parameters, "epochs": args.epochs,
                      "train_images": train_x.shape[0], "train_seconds": round(seconds, 3),
                      "train_images_per_second": round(
                          args.epochs * train_x.shape[0] / seconds, 1)}))


if __name__ == "__main__":
    main()
