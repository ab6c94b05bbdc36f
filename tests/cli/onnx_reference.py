#!/usr/bin/env python3
"""Checks an ONNX model written by `dl-train export` with tools that are not dl-train's own.

  onnx_reference.py MODEL.onnx IMAGES FORMAT PREDICT.csv

1. Debian's python3-onnx checks the file: onnx.checker.check_model with full_check (the schema
   of every node, and strict shape inference through the whole graph).
2. A small NumPy interpreter of the graph's few op types (written here from the ONNX operator
   specification) runs it on IMAGES (an IDX images file, plain or .gz, or a CIFAR batch file:
   FORMAT is idx, cifar10 or cifar100), with pixels as byte / 255, in float64; or on a CSV file
   of features with the label last (FORMAT csv), its numbers as written.
3. Its class probabilities must equal the ones `dl-train predict` wrote (PREDICT.csv) within
   1e-4, and the predicted classes must agree wherever the two best probabilities differ by more.
Exit status 0 when all three hold; the last line says what was compared.
"""
import csv
import gzip
import math
import re
import struct
import sys

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import numpy_helper

TOLERANCE = 1e-4
CIFAR_LABEL_BYTES = {"cifar10": 1, "cifar100": 2}
CIFAR_IMAGE_BYTES = 3 * 32 * 32
IDX_IMAGES_MAGIC = 0x00000803


def read_images(path, fmt):
    """Pixels as float64 in [0, 1], one row per image; a CSV file's rows as written, the label
    (the last field) left out."""
    if fmt == "csv":
        with open(path, newline="") as f:
            return np.array([[float(v) for v in row[:-1]] for row in csv.reader(f) if row])
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if fmt == "idx":
        magic, count, rows, cols = struct.unpack(">IIII", raw[:16])
        assert magic == IDX_IMAGES_MAGIC, f"{path}: not an IDX images file"
        pixels = np.frombuffer(raw, dtype=np.uint8, offset=16, count=count * rows * cols)
        return pixels.reshape(count, rows * cols).astype(np.float64) / 255.0
    record = CIFAR_LABEL_BYTES[fmt] + CIFAR_IMAGE_BYTES
    records = np.frombuffer(raw, dtype=np.uint8).reshape(-1, record)
    return records[:, CIFAR_LABEL_BYTES[fmt]:].astype(np.float64) / 255.0


def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def windows(x, attrs, pad_value):
    """[N, C, OH, OW, kh, kw] views of x padded as the node's pads say."""
    kh, kw = attrs["kernel_shape"]
    sh, sw = attrs.get("strides", [1, 1])
    top, left, bottom, right = attrs.get("pads", [0, 0, 0, 0])
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=pad_value)
    return sliding_window_view(padded, (kh, kw), axis=(2, 3))[:, :, ::sh, ::sw]


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def run_node(op, attrs, ins):
    x = ins[0]
    if op == "Conv":
        out = np.einsum("nchwij,ocij->nohw", windows(x, attrs, 0.0), ins[1])
        return out + ins[2].reshape(1, -1, 1, 1) if len(ins) > 2 else out
    if op == "MaxPool":
        return windows(x, attrs, -np.inf).max(axis=(-2, -1))
    if op == "AveragePool":
        assert attrs.get("count_include_pad", 0) == 1, "only count_include_pad=1 is written"
        return windows(x, attrs, 0.0).mean(axis=(-2, -1))
    if op == "Sub":
        return x - ins[1]
    if op == "Div":
        return x / ins[1]
    if op == "Mul":
        return x * ins[1]
    if op == "Add":
        return x + ins[1]
    if op == "Sum":
        return sum(ins)
    if op == "Concat":
        return np.concatenate(ins, axis=attrs["axis"])
    if op == "Erf":
        return np.vectorize(math.erf)(x).astype(x.dtype)
    if op == "Elu":
        return np.where(x > 0, x, attrs.get("alpha", 1.0) * (np.exp(x) - 1.0))
    if op == "Selu":  # ONNX's defaults are SELU's constants; the exporter writes them anyway
        alpha = attrs.get("alpha", 1.67326319217681884765625)
        gamma = attrs.get("gamma", 1.05070102214813232421875)
        return gamma * np.where(x > 0, x, alpha * (np.exp(x) - 1.0))
    if op == "Softplus":
        return np.logaddexp(0.0, x).astype(x.dtype)
    if op == "HardSigmoid":
        return np.clip(attrs.get("alpha", 0.2) * x + attrs.get("beta", 0.5), 0.0, 1.0)
    if op == "GlobalMaxPool":
        return x.max(axis=(2, 3), keepdims=True)
    if op == "GlobalAveragePool":
        return x.mean(axis=(2, 3), keepdims=True)
    if op == "Flatten":
        return x.reshape(x.shape[0], -1)
    if op == "Gemm":
        assert not attrs.get("transA", 0) and not attrs.get("transB", 0)
        product = attrs.get("alpha", 1.0) * (x @ ins[1])
        return product + attrs.get("beta", 1.0) * ins[2] if len(ins) > 2 else product
    if op == "Relu":
        return np.maximum(x, 0.0)
    if op == "LeakyRelu":
        return np.where(x >= 0, x, attrs.get("alpha", 0.01) * x)
    if op == "Tanh":
        return np.tanh(x)
    if op == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op == "Softmax":
        return softmax(x, attrs.get("axis", -1))
    if op == "BatchNormalization":
        shape = (1, -1) + (1,) * (x.ndim - 2)
        scale, bias, mean, var = (t.reshape(shape) for t in ins[1:5])
        return scale * (x - mean) / np.sqrt(var + attrs.get("epsilon", 1e-5)) + bias
    raise ValueError(f"op {op} is not one dl-train exports")


def run_graph(model, images):
    graph = model.graph
    values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in graph.initializer}
    graph_input = graph.input[0]
    dims = [d.dim_value for d in graph_input.type.tensor_type.shape.dim[1:]]
    values[graph_input.name] = images.reshape([images.shape[0]] + dims)
    for node in graph.node:
        values[node.output[0]] = run_node(node.op_type, attributes(node),
                                          [values[i] for i in node.input])
    return values[graph.output[0].name]


def read_predictions(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert header[0] == "index" and "predicted" in header, f"{path}: unexpected header {header}"
    # The class probabilities p0, p1, ...: after the sample's source (file, line) and class name
    # where predict writes them.
    columns = [i for i, name in enumerate(header) if re.fullmatch(r"p[0-9]+", name)]
    return np.array([[float(row[i]) for i in columns] for row in body])


def main():
    model_path, images_path, fmt, predict_path = sys.argv[1:5]
    model = onnx.load(model_path)
    onnx.checker.check_model(model, full_check=True)
    ops = sorted({n.op_type for n in model.graph.node})
    print(f"onnx.checker.check_model(full_check=True): ok: {model_path} (onnx {onnx.__version__},"
          f" IR version {model.ir_version}, opset {model.opset_import[0].version},"
          f" {len(model.graph.node)} nodes: {', '.join(ops)})")

    ours = run_graph(model, read_images(images_path, fmt))
    theirs = read_predictions(predict_path)
    assert ours.shape == theirs.shape, f"shapes differ: {ours.shape} vs {theirs.shape}"
    diff = np.abs(ours - theirs).max()
    assert diff <= TOLERANCE, f"outputs differ by up to {diff:.3g} (tolerance {TOLERANCE})"
    top2 = np.sort(ours, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0]) > TOLERANCE
    same = ours.argmax(axis=1) == theirs.argmax(axis=1)
    assert same[clear].all(), "the predicted classes differ"
    print(f"NumPy interpreter vs dl-train predict: {ours.shape[0]} images x {ours.shape[1]} classes,"
          f" max |difference| {diff:.2e}, predicted classes agree ({clear.sum()} with a clear"
          f" winner)")


if __name__ == "__main__":
    main()
