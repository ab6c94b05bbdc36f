#!/usr/bin/env python3
"""PyTorch GPU peer for dl-train's CUDA backend: the LeNet, initialization, updater, L2 and
batch size of bench/pytorch_lenet.py (whose network and data code this imports), trained on
Fashion-MNIST with the whole data set preloaded on the device.

Variants: precision float32 | fp16 (autocast float16 + GradScaler) | bf16 (autocast bfloat16),
each eager and torch.compile. For each, a fresh model (seed 123) first takes --warmup-steps
steps plus one step at the epoch's last, smaller batch size (so compilation, cuDNN autotuning
and lazy initialization are done), then gets its initial weights back, a fresh optimizer and
scaler, and trains --epochs timed epochs over the same shuffles as the CPU peer; the device is
synchronized before the clock starts and before it stops. Test accuracy is measured after,
under the variant's autocast. float32 is true float32 (TF32 off for cuDNN and cuBLAS) unless
--tf32, as dl-train's FLOAT does no TF32.

Prints one JSON line per variant (also when it fails or is unsupported, with "error" or
"skipped"); exits 1 when a variant failed. --device cpu is a smoke test of the script itself
(fp16 and torch.compile are skipped where this torch cannot do them).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pytorch_lenet as peer  # noqa: E402  (bench/pytorch_lenet.py: network, data, recipe)

PRECISIONS = {"float32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
MODES = ("eager", "compile")
DEFAULT_WARMUP_STEPS = 30


def parse_list(text, allowed, what):
    items = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [item for item in items if item not in allowed]
    if not items or unknown:
        raise argparse.ArgumentTypeError(
            f"{what} '{text}': use a comma-separated subset of {','.join(allowed)}")
    return items


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--precisions", default="float32,fp16,bf16",
                        type=lambda t: parse_list(t, tuple(PRECISIONS), "--precisions"))
    parser.add_argument("--modes", default="eager,compile",
                        type=lambda t: parse_list(t, MODES, "--modes"))
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--warmup-steps", type=int, default=DEFAULT_WARMUP_STEPS)
    parser.add_argument("--train-limit", type=int, default=0,
                        help="train on the first N images only (0 = all), for smoke tests")
    parser.add_argument("--test-limit", type=int, default=0, help="0 = all")
    parser.add_argument("--threads", type=int, default=2, help="torch threads with --device cpu")
    parser.add_argument("--tf32", action="store_true", help="allow TF32 for float32 products")
    parser.add_argument("--data-dir", default=peer.DEFAULT_DATA_DIR,
                        help="folder with the four Fashion-MNIST .gz IDX files")
    args = parser.parse_args()
    if args.epochs < 1 or args.warmup_steps < 0 or args.train_limit < 0 or args.test_limit < 0:
        parser.error("--epochs must be at least 1; --warmup-steps and the limits at least 0")
    return args


def limited(x, y, limit):
    return (x[:limit], y[:limit]) if limit > 0 else (x, y)


def unsupported_reason(device, precision, mode):
    """Why this torch cannot run the variant on this device, or None."""
    if mode == "compile" and not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    if device == "cpu" and precision == "fp16":
        return "fp16 autocast with GradScaler is a GPU variant"
    if device == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        return "this GPU has no bfloat16"
    return None


def make_scaler(device, precision):
    if precision != "fp16":
        return None
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device)
    return torch.cuda.amp.GradScaler()


class Variant:
    """One model, optimizer and (for fp16) loss scaler, and its train step."""

    def __init__(self, device, precision, mode, image_size):
        torch.manual_seed(peer.SEED)
        self.device = device
        self.precision = precision
        self.autocast_dtype = PRECISIONS[precision]
        self.model = peer.LeNet(image_size)
        peer.init_dl4j(self.model)
        self.model.to(device)
        self.initial_state = {k: v.clone() for k, v in self.model.state_dict().items()}
        self.forward = torch.compile(self.model) if mode == "compile" else self.model
        self.reset()

    def reset(self):
        """Initial weights, a fresh optimizer and scaler: the state before any step."""
        self.model.load_state_dict(self.initial_state)
        self.optimizer = peer.make_optimizer(self.model)
        self.scaler = make_scaler(self.device, self.precision)

    def autocast(self):
        return torch.autocast(self.device, dtype=self.autocast_dtype,
                              enabled=self.autocast_dtype is not None)

    def step(self, xb, yb):
        self.optimizer.zero_grad(set_to_none=True)
        with self.autocast():
            loss = F.nll_loss(self.forward(xb), yb)
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def warm_up(variant, x, y, steps):
    """Steps at the full batch and one at the epoch's last batch size; returns seconds."""
    start = time.perf_counter()
    count = x.shape[0]
    sizes = [min(peer.BATCH_SIZE, count)] * steps
    if count % peer.BATCH_SIZE:
        sizes.append(count % peer.BATCH_SIZE)
    for size in sizes:
        variant.step(x[:size], y[:size])
    synchronize(variant.device)
    return time.perf_counter() - start


def train(variant, x, y, epochs):
    """Timed epochs over the CPU peer's shuffles; returns seconds."""
    generator = torch.Generator().manual_seed(peer.SEED)
    count = x.shape[0]
    variant.model.train()
    synchronize(variant.device)
    start = time.perf_counter()
    for _ in range(epochs):
        order = torch.randperm(count, generator=generator).to(variant.device)
        for first in range(0, count, peer.BATCH_SIZE):
            index = order[first:first + peer.BATCH_SIZE]
            variant.step(x[index], y[index])
    synchronize(variant.device)
    return time.perf_counter() - start


def run_variant(args, data, precision, mode):
    record = {"framework": "pytorch", "device": args.device, "precision": precision,
              "mode": mode, "epochs": args.epochs, "batch": peer.BATCH_SIZE,
              "torch": torch.__version__, "tf32": args.tf32}
    if args.device == "cuda":
        record["gpu"] = torch.cuda.get_device_name()
    reason = unsupported_reason(args.device, precision, mode)
    if reason:
        record["skipped"] = reason
        return record
    train_x, train_y, test_x, test_y = data
    variant = Variant(args.device, precision, mode, train_x.shape[-1])
    record["warmup_seconds"] = round(warm_up(variant, train_x, train_y, args.warmup_steps), 3)
    variant.reset()
    seconds = train(variant, train_x, train_y, args.epochs)
    with variant.autocast():
        record["test_accuracy"] = peer.accuracy(variant.model, test_x, test_y)
    record["train_seconds"] = round(seconds, 3)
    record["train_images_per_second"] = round(args.epochs * train_x.shape[0] / seconds, 1)
    if variant.scaler is not None:
        record["final_loss_scale"] = variant.scaler.get_scale()
    if args.device == "cuda":
        record["peak_gpu_bytes"] = torch.cuda.max_memory_allocated()
    return record


def main():
    args = parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("pytorch_lenet_gpu.py: torch sees no CUDA device; use --device cpu for a smoke test")
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    else:
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = args.tf32
        torch.backends.cuda.matmul.allow_tf32 = args.tf32

    train_x, train_y = limited(*peer.load_split(args.data_dir, peer.TRAIN_IMAGES,
                                                peer.TRAIN_LABELS), args.train_limit)
    test_x, test_y = limited(*peer.load_split(args.data_dir, peer.TEST_IMAGES, peer.TEST_LABELS),
                             args.test_limit)
    data = tuple(t.to(args.device) for t in (train_x, train_y, test_x, test_y))

    failed = False
    for mode in args.modes:
        for precision in args.precisions:
            try:
                record = run_variant(args, data, precision, mode)
            except Exception as error:  # one failing variant must not stop the others
                failed = True
                record = {"framework": "pytorch", "precision": precision, "mode": mode,
                          "error": f"{type(error).__name__}: {error}"}
            print(json.dumps(record), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
