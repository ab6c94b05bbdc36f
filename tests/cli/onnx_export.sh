#!/usr/bin/env bash
# Models that leave the tool: LeNet (configs/mnist.yaml) on generated IDX digits and the Keras
# network (configs/cifar10.yaml) on generated CIFAR-10 batches are trained briefly, `predict`
# writes their class probabilities, `export --format onnx` their graphs, and onnx_reference.py
# checks each file with Debian's python3-onnx and runs it with its own NumPy interpreter: the
# outputs must equal predict's. A third network uses every op type the exporter writes.
source "$(dirname "$0")/lib.sh"
: "${MAKE_CIFAR:?MAKE_CIFAR must name the make_cifar_dataset tool}"
python=${PYTHON3:-/usr/bin/python3}
if ! "$python" -c 'import onnx, numpy' 2>/dev/null; then
  echo "SKIP: $python cannot import onnx and numpy (apt-get install python3-onnx python3-numpy)"
  exit 77
fi

# check NAME CONFIG IMAGES FORMAT SET...: train, predict, export and check one network.
check() {
  local name=$1 config=$2 images=$3 format=$4
  shift 4
  local run="$WORK/$name"
  # The CPU, pinned: the same results, and no note about GPUs, on any machine.
  local sets=(--set "output.directory=$run" --set epochs=1 --set parallel.workers=1
    --set backend=cpu)
  for s in "$@"; do sets+=(--set "$s"); done
  "$DL_TRAIN" --config "$config" "${sets[@]}" >"$WORK/$name-train.txt"
  "$DL_TRAIN" predict --model "$run/model.dlm" --input "$images" --output "$WORK/$name.csv" \
    2>"$WORK/$name-predict.txt"
  local rc=0
  "$DL_TRAIN" export --format onnx --model "$run/model.dlm" --output "$WORK/$name.onnx" \
    >"$WORK/$name-export.txt" 2>&1 || rc=$?
  if [ "$rc" = 2 ] && grep -q "built without protobuf" "$WORK/$name-export.txt"; then
    echo "SKIP: $(cat "$WORK/$name-export.txt")"
    exit 77
  fi
  [ "$rc" = 0 ] || fail "export $name: exit $rc: $(cat "$WORK/$name-export.txt")"
  echo "$name: $(cat "$WORK/$name-predict.txt")"
  echo "$name: $(cat "$WORK/$name-export.txt")"
  "$python" "$DL_SOURCE_DIR/tests/cli/onnx_reference.py" "$WORK/$name.onnx" "$images" "$format" \
    "$WORK/$name.csv" || fail "$name: the exported model does not check"
}

make_data "$WORK/digits" 96 24
check lenet "$DL_SOURCE_DIR/configs/mnist.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx \
  "data.trainImages=$WORK/digits/train-images-idx3-ubyte.gz" \
  "data.trainLabels=$WORK/digits/train-labels-idx1-ubyte.gz" \
  "data.testImages=$WORK/digits/t10k-images-idx3-ubyte.gz" \
  "data.testLabels=$WORK/digits/t10k-labels-idx1-ubyte.gz" batchSize=32

# The data section of the generated networks below: the generated digits.
digits_data() {
  cat <<YAML
data:
  trainImages: $WORK/digits/train-images-idx3-ubyte.gz
  trainLabels: $WORK/digits/train-labels-idx1-ubyte.gz
  testImages: $WORK/digits/t10k-images-idx3-ubyte.gz
  testLabels: $WORK/digits/t10k-labels-idx1-ubyte.gz
YAML
}

# Every op type and layout the exporter writes (global pooling: below): a strided Same convolution (asymmetric padding),
# leaky ReLU, batch normalization over channels and over features, average pooling over zero
# padding, dropout (no node), tanh, sigmoid.
cat >"$WORK/zoo.yaml" <<YAML
seed: 3
updater: {type: adamw, learningRate: 0.01}
batchSize: 16
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {nOut: 4, kernelSize: 3, stride: 2, convolutionMode: Same, activation: leakyrelu}
  - batchNormalization: {}
  - subsampling: {poolingType: avg, kernelSize: 3, stride: 2, padding: 1}
  - subsampling: {poolingType: max, kernelSize: 2, stride: 1, convolutionMode: Same}
  - dense: {nOut: 12, activation: tanh}
  - dropout: {dropOut: 0.8}
  - batchNormalization: {}
  - dense: {nOut: 8, activation: sigmoid}
  - output: {nOut: 10, activation: softmax}
$(digits_data)
YAML
check zoo "$WORK/zoo.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx epochs=2
# Global pooling, average then (the same network) max, straight into the classifier.
for pooling in avg max; do
  sed -e "s/  - subsampling: {poolingType: max, kernelSize: 2, stride: 1, convolutionMode: Same}/  - globalPooling: {poolingType: $pooling}/" \
    "$WORK/zoo.yaml" >"$WORK/global-$pooling.yaml"
  grep -q globalPooling "$WORK/global-$pooling.yaml" || fail "no globalPooling in the zoo config"
  check "global-$pooling" "$WORK/global-$pooling.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx
done
# Activation layers in the order modern CNNs use (convolution -> batch normalization -> GELU),
# and the activations opset 13 writes as their formulas (GELU, SiLU, hardswish, mish) or as its
# own nodes (Elu, Selu).
cat >"$WORK/modern.yaml" <<YAML
seed: 5
updater: {type: adam, learningRate: 0.005}
batchSize: 16
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {nOut: 4, kernelSize: 3, stride: 2, activation: identity}
  - batchNormalization: {}
  - activation: {activation: gelu}
  - convolution: {nOut: 6, kernelSize: 3, activation: silu}
  - subsampling: {poolingType: max, kernelSize: 2, stride: 2}
  - activation: {activation: elu}
  - dense: {nOut: 16, activation: hardswish}
  - activation: {}
  - dense: {nOut: 12, activation: mish}
  - activation: {activation: selu}
  - output: {nOut: 10, activation: softmax}
$(digits_data)
YAML
check modern "$WORK/modern.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx epochs=2
for node in Erf HardSigmoid Elu Selu Relu Softplus; do
  grep -q "$node" "$WORK/modern.onnx" || fail "no $node node in the exported modern network"
done

# A graph: a residual block with a projection shortcut, bias-free convolutions, a branch from
# the network's input and a concatenation (ONNX Sum, Concat; Conv and Gemm without bias input).
cat >"$WORK/graph.yaml" <<YAML
seed: 7
updater: {type: nesterovs, learningRate: 0.05, momentum: 0.9}
batchSize: 16
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {name: stem, nOut: 4, kernelSize: 3, stride: 2, padding: 1, hasBias: false}
  - batchNormalization: {name: stem_bn}
  - activation: {name: stem_relu, activation: relu}
  - convolution: {name: c1, nOut: 6, kernelSize: 3, stride: 2, padding: 1, hasBias: false}
  - batchNormalization: {name: c1_bn}
  - convolution: {name: proj, inputs: stem_relu, nOut: 6, kernelSize: 1, stride: 2, hasBias: false}
  - add: {name: block, inputs: [c1_bn, proj], activation: relu}
  - subsampling: {name: side, inputs: input, poolingType: avg, kernelSize: 4, stride: 4}
  - concat: {name: both, inputs: [block, side]}
  - dense: {nOut: 12, activation: tanh, hasBias: false}
  - output: {nOut: 10, activation: softmax}
$(digits_data)
YAML
check graph "$WORK/graph.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx epochs=2
for node in Sum Concat; do
  grep -q "$node" "$WORK/graph.onnx" || fail "no $node node in the exported graph"
done

# A pooled branch (GlobalAveragePool's [N, c, 1, 1]) added to and concatenated with dense
# outputs ([N, c]): the export flattens it first, so that ONNX's Sum and Concat get one rank.
cat >"$WORK/pooled.yaml" <<YAML
seed: 7
updater: {type: nesterovs, learningRate: 0.05, momentum: 0.9}
batchSize: 16
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {name: c, nOut: 6, kernelSize: 3, stride: 2, activation: relu}
  - globalPooling: {name: gap, poolingType: avg}
  - dense: {name: wide, inputs: input, nOut: 6, activation: relu}
  - add: {name: sum, inputs: [gap, wide], activation: relu}
  - concat: {name: both, inputs: [sum, gap]}
  - output: {nOut: 10, activation: softmax}
$(digits_data)
YAML
check pooled "$WORK/pooled.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx epochs=2
grep -q "sum.flatten0" "$WORK/pooled.onnx" || fail "no Flatten before the pooled branch's Sum"

# Layer names are the user's: an output layer named like the graph's output ("probabilities"),
# a layer named like another's weights ("c.W") or like the normalization's values: every value
# still gets a name of its own (the file had 'probabilities' computed twice, which the checker
# refuses: "Graph must be in single static assignment (SSA) form").
cat >"$WORK/names.yaml" <<YAML
seed: 7
batchSize: 16
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {name: c, nOut: 4, kernelSize: 3, stride: 2, activation: gelu}
  - convolution: {name: c.W, nOut: 4, kernelSize: 3, activation: relu}
  - dense: {name: input.normalized, nOut: 8, activation: relu}
  - output: {name: probabilities, nOut: 10, activation: softmax}
$(digits_data)
  normalize: true
YAML
check names "$WORK/names.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx

# A softmax over planes of one pixel (a convolution as wide as its input, an activation layer
# after globalPooling) is ONNX's Softmax over the channels: exported, where it was refused as
# "a softmax over an image-shaped output"; over larger planes it still is refused.
cat >"$WORK/softmax.yaml" <<YAML
seed: 7
batchSize: 16
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {name: c, nOut: 8, kernelSize: 3, stride: 2, activation: relu}
  - convolution: {name: whole, nOut: 6, kernelSize: 13, activation: softmax}
  - globalPooling: {name: gap, inputs: c}
  - activation: {name: gap_softmax, activation: softmax}
  - concat: {inputs: [whole, gap_softmax]}
  - output: {nOut: 10, activation: softmax}
$(digits_data)
YAML
check softmax "$WORK/softmax.yaml" "$WORK/digits/t10k-images-idx3-ubyte.gz" idx
cat >"$WORK/softmax_planes.yaml" <<YAML
seed: 7
inputType: {convolutionalFlat: {height: 28, width: 28, channels: 1}}
layers:
  - convolution: {nOut: 4, kernelSize: 14, stride: 14, activation: softmax}
  - output: {nOut: 10, activation: softmax}
$(digits_data)
YAML
"$DL_TRAIN" --config "$WORK/softmax_planes.yaml" --set "output.directory=$WORK/softmax_planes" \
  --set backend=cpu >"$WORK/softmax_planes-train.txt"
expect_failure 2 "layer 'convolution0' \(convolution\): a softmax over an image-shaped output has no single ONNX axis" -- \
  "$DL_TRAIN" export --format onnx --model "$WORK/softmax_planes/model.dlm" --output "$WORK/softmax_planes.onnx"

mkdir -p "$WORK/cifar"
"$MAKE_CIFAR" "$WORK/cifar" 96 24
check keras "$DL_SOURCE_DIR/configs/cifar10.yaml" "$WORK/cifar/test_batch.bin" cifar10 \
  "data.directory=$WORK/cifar"
# The same images read as flat vectors (feedForward: 3072, a Keras Dense network on CIFAR),
# normalized per channel: the graph's mean and std cover each channel's 1024 features, where
# [1, 3] did not broadcast against [N, 3072] and onnx.checker refused the file.
cat >"$WORK/flat.yaml" <<YAML
seed: 7
batchSize: 16
inputType: {feedForward: {size: 3072}}
layers:
  - dense: {nOut: 16, activation: relu}
  - output: {nOut: 10, activation: softmax}
data: {format: cifar10, directory: $WORK/cifar, normalize: true}
YAML
check flat "$WORK/flat.yaml" "$WORK/cifar/test_batch.bin" cifar10

# predict's CSV: a header, then one row per image whose probabilities sum to 1.
[ "$(head -1 "$WORK/keras.csv")" = "index,predicted,p0,p1,p2,p3,p4,p5,p6,p7,p8,p9" ] ||
  fail "CSV header: $(head -1 "$WORK/keras.csv")"
[ "$(wc -l <"$WORK/keras.csv")" = 25 ] || fail "expected 24 rows"
awk -F, 'NR > 1 { s = 0; for (i = 3; i <= NF; i++) s += $i; if (s < 0.999 || s > 1.001) exit 1 }' \
  "$WORK/keras.csv" || fail "probabilities do not sum to 1"
# An image file of the wrong kind: one line, exit 3.
expect_failure 3 "images of 28x28 \(784 values\), but the model takes 3072 values" -- \
  "$DL_TRAIN" predict --model "$WORK/keras/model.dlm" --input "$WORK/digits/t10k-images-idx3-ubyte.gz" \
  --input-format idx
# Average pooling whose padding reaches its kernel: dl-train's values and ONNX's agree, but ONNX
# Runtime refuses such a node when it loads the file ("Pad should be smaller than kernel"), so
# the export refuses it, one line naming the layer, as it refuses max pooling there.
sed -e "s/kernelSize: 3, stride: 2, padding: 1}/kernelSize: 2, stride: 2, padding: 2}/" \
  "$WORK/zoo.yaml" >"$WORK/padded.yaml"
grep -q "padding: 2}" "$WORK/padded.yaml" || fail "no padded pooling in the zoo config"
"$DL_TRAIN" --config "$WORK/padded.yaml" --set "output.directory=$WORK/padded" --set backend=cpu \
  >"$WORK/padded-train.txt"
expect_failure 2 "layer 'subsampling2' \(subsampling\): padding 2x2 is not smaller than the kernel 2x2, which ONNX Runtime refuses" -- \
  "$DL_TRAIN" export --format onnx --model "$WORK/padded/model.dlm" --output "$WORK/padded.onnx"
[ ! -e "$WORK/padded.onnx" ] || fail "a refused export left $WORK/padded.onnx"
echo "ok: predict and export checked for LeNet and the Keras network"
