#!/usr/bin/python3
"""Names the kernels PyTorch uses for LeNet on this CPU, for bench/compare_cpu.sh's header.

Runs one forward and backward pass of LeNet's two convolutions and a max pooling at batch 128
with oneDNN's verbose log on (compare_cpu.sh sets DNNL_VERBOSE=1 and greps the log for the ISA
oneDNN detected and the implementation each convolution ran), then prints PyTorch's build line
for its own vectorized loops ("CPU capability usage").
"""

import argparse
import re

import torch
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x = torch.randn(128, 1, 28, 28)
    w1 = torch.randn(20, 1, 5, 5, requires_grad=True)
    w2 = torch.randn(50, 20, 5, 5, requires_grad=True)
    y = F.max_pool2d(F.conv2d(F.max_pool2d(F.conv2d(x, w1), 2), w2), 2)
    y.sum().backward()
    config = torch.__config__.show()
    capability = re.search(r"CPU capability usage: (\S+)", config)
    print(f"torch-config: mkldnn {'on' if torch.backends.mkldnn.is_available() else 'off'}, "
          f"ATen CPU capability {capability.group(1) if capability else 'unknown'}")


if __name__ == "__main__":
    main()
