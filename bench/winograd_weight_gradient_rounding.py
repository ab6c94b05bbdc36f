#!/usr/bin/env python3
"""Rounding of a convolution's weight gradient computed in the Winograd domain, in float32.

LeNet's second layer at batch 128 (20 -> 50 channels, 5x5 filters, 12x12 inputs): dW by the
columns path's order (one float32 product per sample, 16 samples per partial, 8 partials) and by
F(2x2, 5x5) transposed, dW = G^T [sum over tiles of (A dY) . (B^T X)] G, with the tiles' sum
blocked as a lane kernel would add it (16 lanes, one per tile of a sample, each lane summing the
partial's 16 samples, then the lanes, then the partials). Both against a float64 reference.
The matrices are built as src/backend/cpu/conv2d_winograd_transforms.hpp builds them, from the
points 0, 1, -1, 2, -1/2. Prints the largest error over the largest gradient, and the norm of the
error over the gradient's norm, for inputs with mean 0, 1 and 5. Needs numpy (Debian's
python3-numpy); docs/ARCHITECTURE.md quotes its output.
"""
import numpy as np

POINTS = [0.0, 1.0, -1.0, 2.0, -0.5]
M, R = 2, 5
N = M + R - 1
BATCH, IN_CH, OUT_CH, IN_HW, OUT_HW = 128, 20, 50, 12, 8
PARTIALS, PER_PARTIAL = 8, 16
F32 = np.float32


def toom_cook():
    """At (M x N), G (N x R), Bt (N x N) of F(M, R), as the C++ builds them."""
    finite = N - 1
    at, g, bt = np.zeros((M, N)), np.zeros((N, R)), np.zeros((N, N))
    for k in range(M):
        for i in range(finite):
            at[k, i] = POINTS[i] ** k
        at[k, finite] = 1.0 if k == M - 1 else 0.0
    for i in range(finite):
        denominator = np.prod([POINTS[i] - POINTS[j] for j in range(finite) if j != i])
        for k in range(R):
            g[i, k] = POINTS[i] ** k / denominator
    g[finite, R - 1] = 1.0
    for i in range(finite + 1):
        c = np.zeros(N + 1)
        c[0] = 1.0
        degree = 0
        for j in range(finite):
            if j == i:
                continue
            for k in range(degree + 1, 0, -1):
                c[k] = c[k - 1] - POINTS[j] * c[k]
            c[0] = -POINTS[j] * c[0]
            degree += 1
        bt[i, :] = c[:N]
    return at, g, bt


def reference(x, dy):
    dw = np.zeros((OUT_CH, IN_CH, R, R))
    xd, dyd = x.astype(np.float64), dy.astype(np.float64)
    for i in range(R):
        for j in range(R):
            window = xd[:, :, i:i + OUT_HW, j:j + OUT_HW]
            dw[:, :, i, j] = np.einsum('nchw,nohw->oc', window, dyd)
    return dw


def by_columns(x, dy):
    total = np.zeros((OUT_CH, IN_CH * R * R), F32)
    for p in range(PARTIALS):
        partial = np.zeros_like(total)
        for s in range(PER_PARTIAL):
            n = p * PER_PARTIAL + s
            col = np.stack([x[n, :, i:i + OUT_HW, j:j + OUT_HW].reshape(IN_CH, -1)
                            for i in range(R) for j in range(R)], 1).reshape(IN_CH * R * R, -1)
            partial = (partial + dy[n].reshape(OUT_CH, -1) @ col.T).astype(F32)
        total = (total + partial).astype(F32)
    return total.reshape(OUT_CH, IN_CH, R, R)


def by_winograd(x, dy):
    at, g, bt = (m.astype(F32) for m in toom_cook())
    a = at.T
    tiles = OUT_HW // M
    x_hat = np.zeros((BATCH, IN_CH, tiles * tiles, N, N), F32)
    dy_hat = np.zeros((BATCH, OUT_CH, tiles * tiles, N, N), F32)
    for r in range(tiles):
        for c in range(tiles):
            t = r * tiles + c
            window = x[:, :, M * r:M * r + N, M * c:M * c + N]
            x_hat[:, :, t] = np.einsum('ij,ncjk,lk->ncil', bt, window, bt).astype(F32)
            piece = dy[:, :, M * r:M * r + M, M * c:M * c + M]
            dy_hat[:, :, t] = np.einsum('ij,ncjk,lk->ncil', a, piece, a).astype(F32)
    total = np.zeros((OUT_CH, IN_CH, R, R), F32)
    for p in range(PARTIALS):
        lanes = np.zeros((OUT_CH, IN_CH, tiles * tiles, N, N), F32)
        for s in range(PER_PARTIAL):
            n = p * PER_PARTIAL + s
            lanes = (lanes + dy_hat[n][:, None] * x_hat[n][None, :]).astype(F32)
        summed = lanes.sum(axis=2, dtype=F32)
        total = (total + np.einsum('ji,ocjk,kl->ocil', g, summed, g).astype(F32)).astype(F32)
    return total


def main():
    for mean in (0.0, 1.0, 5.0):
        rng = np.random.default_rng(1)
        x = (np.maximum(rng.standard_normal((BATCH, IN_CH, IN_HW, IN_HW)), 0) + mean).astype(F32)
        dy = (rng.standard_normal((BATCH, OUT_CH, OUT_HW, OUT_HW)) * 1e-3).astype(F32)
        want = reference(x, dy)
        for name, method in (('columns', by_columns), ('winograd', by_winograd)):
            error = method(x, dy) - want
            print(f'input mean {mean}: {name:8s} max error / max |dW| '
                  f'{np.abs(error).max() / np.abs(want).max():.2e}, '
                  f'norm {np.linalg.norm(error) / np.linalg.norm(want):.2e}')


if __name__ == '__main__':
    main()
