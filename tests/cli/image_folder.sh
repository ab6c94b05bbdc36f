#!/usr/bin/env bash
# data.format: imagefolder end to end, on a folder generated from Fashion-MNIST (PNG and JPEG):
# configs/fashion-mnist-folder.yaml trains to an accuracy close to the same images read as IDX;
# validate prints the class table; predict reads one JPEG, the test folder and a folder of
# unlabelled images, naming each row's file; every bad input is one line naming
# the file, exit 3, nothing written; data.onBadFile: skip names what it left out.
source "$(dirname "$0")/lib.sh"
: "${PYTHON3:?PYTHON3 must name python3 with Pillow}"
"$PYTHON3" -c "import PIL" 2>/dev/null || { echo "SKIP: python3-pil is not installed"; exit 77; }
fashion=/usr/share/datasets/fashion-mnist
[ -e "$fashion/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no $fashion"; exit 77; }
make_folder="$DL_SOURCE_DIR/tests/tools/make_image_folder.py"
train_count=3000
test_count=1000
"$PYTHON3" "$make_folder" "$fashion/train-images-idx3-ubyte.gz" \
  "$fashion/train-labels-idx1-ubyte.gz" "$WORK/folder/train" "$train_count" --format mixed
"$PYTHON3" "$make_folder" "$fashion/t10k-images-idx3-ubyte.gz" \
  "$fashion/t10k-labels-idx1-ubyte.gz" "$WORK/folder/test" "$test_count"

cfg="$DL_SOURCE_DIR/configs/fashion-mnist-folder.yaml"
folder_set=(--set backend=cpu --set "data.trainDirectory=$WORK/folder/train"
  --set "data.testDirectory=$WORK/folder/test")
epochs=3

"$DL_TRAIN" validate --config "$cfg" "${folder_set[@]}" >"$WORK/validate.txt"
grep -q "data OK: $train_count training examples (28x28)" "$WORK/validate.txt" ||
  fail "validate: $(tail -5 "$WORK/validate.txt")"
grep -qE "^ +1  Bag +[0-9]+$" "$WORK/validate.txt" || fail "no class table: $(cat "$WORK/validate.txt")"
grep -q "images in $WORK/folder/train: 28x28 ($train_count)" "$WORK/validate.txt" ||
  fail "no image sizes: $(tail -3 "$WORK/validate.txt")"
echo "ok: validate prints the class table and the image sizes"

# The folder and the same images as IDX (the first train_count and test_count of each file).
"$DL_TRAIN" --config "$cfg" "${folder_set[@]}" --set epochs=$epochs \
  --set "output.directory=$WORK/run-folder" --set output.console=epochs >"$WORK/folder.txt"
"$DL_TRAIN" --config "$DL_SOURCE_DIR/configs/fashion-mnist.yaml" --set backend=cpu \
  --set epochs=$epochs --set data.trainLimit=$train_count --set data.testLimit=$test_count \
  --set "output.directory=$WORK/run-idx" --set output.console=epochs >"$WORK/idx.txt"
accuracy() { sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$1/summary.json"; }
folder_accuracy=$(accuracy "$WORK/run-folder")
idx_accuracy=$(accuracy "$WORK/run-idx")
echo "ok: $epochs epochs on $train_count images: test accuracy $folder_accuracy from the image" \
  "folder (half JPEG), $idx_accuracy from the IDX files"
awk -v a="$folder_accuracy" -v b="$idx_accuracy" \
  'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a >= 0.6 && d <= 0.06) }' ||
  fail "image folder accuracy $folder_accuracy is not close to IDX's $idx_accuracy"

# predict on one JPEG of another size, in colour: fitted to 28x28 gray; the class named.
"$PYTHON3" -c "
from PIL import Image
import glob
Image.open(sorted(glob.glob('$WORK/folder/test/Trouser/*.png'))[0]).convert('RGB') \
  .resize((84, 84)).save('$WORK/trouser.jpg', quality=90)"
"$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/trouser.jpg" >"$WORK/predict.csv" \
  2>"$WORK/predict.err"
head -1 "$WORK/predict.csv" | grep -q "^index,file,predicted,predicted_class,p0" ||
  fail "predict header: $(head -1 "$WORK/predict.csv")"
grep -q "^0,$WORK/trouser.jpg,9,Trouser," "$WORK/predict.csv" || fail "predict: $(cat "$WORK/predict.csv")"
echo "ok: predict on one JPEG: $(cut -d, -f1-3 "$WORK/predict.csv" | tail -1)"
# predict on the test folder: labelled by its class folders, the run's test accuracy.
"$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/folder/test" -o "$WORK/folder.csv" \
  2>"$WORK/predict.err"
grep -q "predict: $test_count images from $WORK/folder/test (28x28), accuracy $(printf '%.4f' "$folder_accuracy")" \
  "$WORK/predict.err" || fail "predict on the folder: $(cat "$WORK/predict.err")"
echo "ok: predict on the test folder: $(cat "$WORK/predict.err")"
# A model trained on numbered classes (IDX) has no names for class folders: said so (it said the
# folders "are not the classes the model was trained on ()").
expect_failure 3 "folder/test: its images are in class folders \(.*\), but the model was trained on numbered classes \(data.format: idx\)" -- \
  "$DL_TRAIN" predict -m "$WORK/run-idx/model.dlm" -i "$WORK/folder/test" --input-format imagefolder
# Each row names its file under the folder, so rows match files whatever was left out.
grep -q "^1,Ankle_boot/[^,]*\.png,[0-9],[A-Za-z_-]*,0\?[.0-9e-]*," "$WORK/folder.csv" ||
  fail "predict rows do not name their files: $(sed -n 2,3p "$WORK/folder.csv")"
# eval --predictions on the test folder names each row's file and label as predict does (it named
# no file: a mistake could not be traced to its image).
"$DL_TRAIN" eval -m "$WORK/run-folder/model.dlm" --predictions "$WORK/eval.csv" >/dev/null
head -1 "$WORK/eval.csv" | grep -q "^index,file,label,predicted,predicted_class,p0," ||
  fail "eval --predictions header: $(head -1 "$WORK/eval.csv")"
cmp <(cut -d, -f1,2,4- "$WORK/eval.csv") "$WORK/folder.csv" ||
  fail "eval --predictions rows differ from predict's: $(sed -n 2,3p "$WORK/eval.csv")"
echo "ok: eval --predictions names each test image's file: $(sed -n 2p "$WORK/eval.csv" | cut -d, -f1-4)"
# A folder of images with no class folders (new photos to classify): read unlabelled, each row
# named by its file; it was refused as 'has no class folders'.
mkdir -p "$WORK/photos"
cp "$WORK/trouser.jpg" "$WORK/photos/b.jpg"
cp "$(ls "$WORK"/folder/test/Bag/*.png | head -1)" "$WORK/photos/a, bag.png"
"$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/photos" >"$WORK/photos.csv" \
  2>"$WORK/photos.err" || fail "predict on a folder of images: $(cat "$WORK/photos.err")"
[ "$(sed -n 3p "$WORK/photos.csv" | cut -d, -f1-4)" = "1,b.jpg,9,Trouser" ] ||
  fail "predict on a folder of images: $(cat "$WORK/photos.csv")"
sed -n 2p "$WORK/photos.csv" | grep -q '^0,"a, bag.png",' || fail "a name with a comma is not quoted: $(cat "$WORK/photos.csv")"
grep -q "predict: 2 images from $WORK/photos (28x28)$" "$WORK/photos.err" ||
  fail "an unlabelled folder got an accuracy: $(cat "$WORK/photos.err")"
mkdir -p "$WORK/no-photos"
expect_failure 3 "^dl-train: error: $WORK/no-photos: the folder is empty; give --input a PNG or JPEG image" -- \
  "$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/no-photos"
# A bad file among them: the refusal advises data.onBadFile: skip, which predict takes by --set.
printf 'not an image' >"$WORK/photos/c.png"
expect_failure 3 "photos/c.png: .*set data.onBadFile: skip" -- \
  "$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/photos"
"$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/photos" --set data.onBadFile=skip \
  >"$WORK/skipped.csv" 2>"$WORK/skipped.err" || fail "predict --set data.onBadFile=skip: $(cat "$WORK/skipped.err")"
[ "$(wc -l <"$WORK/skipped.csv")" = 3 ] && grep -q "skipped $WORK/photos/c.png: " "$WORK/skipped.err" ||
  fail "predict --set data.onBadFile=skip: $(cat "$WORK/skipped.csv" "$WORK/skipped.err")"
rm "$WORK/photos/c.png"
echo "ok: predict on a folder of images names each row's file; --set data.onBadFile=skip leaves a bad one out"
# A folder of some of the classes: named as such, not told to set data.numClasses to its count.
mkdir -p "$WORK/one-class" && cp -r "$WORK/folder/test/Bag" "$WORK/one-class/"
expect_failure 3 "^dl-train: error: $WORK/one-class: its class folders \(Bag\) are not the training folder's \(Ankle_boot, Bag, " \
  "every folder of a data set has the same class folders$" -- \
  "$DL_TRAIN" predict -m "$WORK/run-folder/model.dlm" -i "$WORK/one-class" -o "$WORK/one.csv"
[ ! -e "$WORK/one.csv" ] || fail "the refused predict wrote $WORK/one.csv"

# The ONNX export carries the class names (where this build exports ONNX and python3-onnx exists).
names=$(onnx_class_names "$WORK/run-folder/model.dlm")
if [ -n "$names" ]; then
  [ "$names" = "Ankle_boot,Bag,Coat,Dress,Pullover,Sandal,Shirt,Sneaker,T-shirt_top,Trouser" ] ||
    fail "ONNX class names: $names"
  echo "ok: the ONNX export's metadata names the classes: $names"
fi

# Bad input: a small folder, one fault at a time.
small="$WORK/small"
pngs=("$WORK/folder/train/Bag/"*.png)
jpegs=("$WORK/folder/train/Bag/"*.jpg)
for c in a b; do
  mkdir -p "$small/$c"
  cp "${pngs[1]}" "$small/$c/1.png"
  cp "${jpegs[0]}" "$small/$c/2.jpg"
done
run_small() {
  local dir=$1
  shift
  "$DL_TRAIN" --config "$cfg" --set backend=cpu --set "data.trainDirectory=$dir" \
    --set "data.testDirectory=$dir" --set data.numClasses=2 --set layers.5.nOut=2 \
    --set "output.directory=$WORK/bad-run" --set epochs=1 "$@"
}
"$DL_TRAIN" validate --config "$cfg" --set "data.trainDirectory=$small" \
  --set "data.testDirectory=$small" --set data.numClasses=2 --set layers.5.nOut=2 >/dev/null ||
  fail "the small folder itself does not validate"
fault() {  # fault NAME: a fresh copy of the small folder as $WORK/NAME
  rm -rf "${WORK:?}/$1" && cp -r "$small" "$WORK/$1"
}
nothing_written() { [ ! -e "$WORK/bad-run" ] || fail "a failed run wrote $WORK/bad-run"; }

fault truncated_jpeg && head -c 300 "$small/a/2.jpg" >"$WORK/truncated_jpeg/a/2.jpg"
expect_failure 3 "truncated_jpeg/a/2.jpg: is not a valid JPEG" "onBadFile: skip" -- \
  run_small "$WORK/truncated_jpeg"
nothing_written
# Cut inside the compressed scan: TurboJPEG's warning stops the decoding (no grey rows).
fault cut_jpeg && head -c $(($(stat -c %s "$small/a/2.jpg") * 8 / 10)) "$small/a/2.jpg" \
  >"$WORK/cut_jpeg/a/2.jpg"
expect_failure 3 "cut_jpeg/a/2.jpg: is not a valid JPEG \(Premature end of JPEG file\)" -- \
  run_small "$WORK/cut_jpeg"
fault truncated_png && head -c 100 "$small/a/1.png" >"$WORK/truncated_png/a/1.png"
expect_failure 3 "truncated_png/a/1.png: is not a valid PNG" -- run_small "$WORK/truncated_png"
fault corrupt_png && "$PYTHON3" -c "
data = bytearray(open('$small/a/1.png', 'rb').read())
data[len(data) // 2] ^= 0xff
open('$WORK/corrupt_png/a/1.png', 'wb').write(data)"
expect_failure 3 "corrupt_png/a/1.png: is not a valid PNG" -- run_small "$WORK/corrupt_png"
fault not_image && echo "not an image" >"$WORK/not_image/b/notes.png"
expect_failure 3 "not_image/b/notes.png: is not an image" -- run_small "$WORK/not_image"
# Decompression bombs: headers declaring 60000 x 60000 pixels, refused before decoding.
fault bomb && "$PYTHON3" -c "
import struct, zlib
def chunk(kind, body):
    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))
header = struct.pack('>IIBBBBB', 60000, 60000, 8, 0, 0, 0, 0)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IDAT', zlib.compress(b'\0' * 64)) \
    + chunk(b'IEND', b'')
open('$WORK/bomb/a/1.png', 'wb').write(png)"
expect_failure 3 "bomb/a/1.png: declares 60000 x 60000 pixels" "decompression bomb" -- \
  run_small "$WORK/bomb"
fault jpeg_bomb && "$PYTHON3" -c "
data = bytearray(open('$small/a/2.jpg', 'rb').read())
sof = data.index(b'\xff\xc0')
data[sof + 5:sof + 9] = (60000).to_bytes(2, 'big') * 2
open('$WORK/jpeg_bomb/a/2.jpg', 'wb').write(data)"
expect_failure 3 "jpeg_bomb/a/2.jpg: declares 60000 x 60000 pixels" -- run_small "$WORK/jpeg_bomb"
fault empty_class && mkdir "$WORK/empty_class/c"
expect_failure 3 "empty_class/c: the class folder holds no images" -- \
  run_small "$WORK/empty_class" --set data.numClasses=3 --set layers.5.nOut=3
# Counted against numClasses, the empty folder was first told 'set data.numClasses: 3'.
expect_failure 3 "empty_class/c: the class folder holds no images" -- run_small "$WORK/empty_class"
mkdir -p "$WORK/no_classes" && cp "$small/a/1.png" "$WORK/no_classes/"
expect_failure 3 "no_classes: has no class folders" -- run_small "$WORK/no_classes"
expect_failure 3 "no_such_folder: missing; data.trainDirectory names a folder" -- \
  run_small "$WORK/no_such_folder"
fault dangling && ln -s "$WORK/nowhere.png" "$WORK/dangling/a/3.png"
expect_failure 3 "dangling/a/3.png: cannot be read" -- run_small "$WORK/dangling"
fault fifo && mkfifo "$WORK/fifo/a/3.png"
expect_failure 3 "fifo/a/3.png: is a FIFO \(named pipe\), not a regular file" -- run_small "$WORK/fifo"
if [ "$(id -u)" != 0 ]; then
  fault unreadable && chmod 000 "$WORK/unreadable/a/1.png"
  expect_failure 3 "unreadable/a/1.png: cannot open: Permission denied" -- \
    run_small "$WORK/unreadable"
fi
fault loop && ln -s loop.png "$WORK/loop/a/loop.png"
expect_failure 3 "loop/a/loop.png: cannot be read: a symbolic-link loop" -- run_small "$WORK/loop"
fault class_loop && ln -s c "$WORK/class_loop/c"
expect_failure 3 "class_loop/c: cannot be read: a symbolic-link loop" -- run_small "$WORK/class_loop"
fault bad_name && cp "$small/a/1.png" "$WORK/bad_name/a/"$'\xff'".png"
expect_failure 3 'bad_name/a/\\xff.png: the file name is not UTF-8' -- run_small "$WORK/bad_name"
fault other_classes && mv "$WORK/other_classes/b" "$WORK/other_classes/x"
expect_failure 3 "other_classes: its class folders \(a, x\) are not the training folder's \(a, b\)" -- \
  run_small "$small" --set "data.testDirectory=$WORK/other_classes"
expect_failure 3 "has 2 class folders but data.numClasses is 10" "set data.numClasses: 2" -- \
  run_small "$small" --set data.numClasses=10 --set layers.5.nOut=10
# A folder inside a class folder: no file to replace.
fault nested && mkdir "$WORK/nested/a/sub" && cp "$small/a/1.png" "$WORK/nested/a/sub/"
expect_failure 3 "nested/a/sub: is a folder inside a class folder; images go directly in their class's folder; move its images up into the class folder, or remove it" -- \
  run_small "$WORK/nested"
# Class folders that print alike but differ in Unicode form (macOS writes names decomposed):
# the two lists printed the same, and the message now says why they differ.
mkdir -p "$WORK/nfc" "$WORK/nfd"
cp -r "$small/a" "$WORK/nfc/caf"$'\xc3\xa9' && cp -r "$small/b" "$WORK/nfc/tea"
cp -r "$small/a" "$WORK/nfd/cafe"$'\xcc\x81' && cp -r "$small/b" "$WORK/nfd/tea"
expect_failure 3 "nfd: its class folders .* are not the training folder's .*the names differ in their Unicode form" -- \
  run_small "$WORK/nfc" --set "data.testDirectory=$WORK/nfd"
# The folder above train/ and test/ given as the training folder: said so, with the folder to set
# (it was 'has 2 class folders ... set data.numClasses: 2', a wrong fix).
mkdir -p "$WORK/above" && cp -r "$small" "$WORK/above/train" && cp -r "$small" "$WORK/above/test"
expect_failure 3 "above: its folders \(test, train\) hold folders, not images: data.trainDirectory names the folder whose subfolders are the classes; set it to $WORK/above/train$" -- \
  run_small "$WORK/above" --set data.numClasses=2
expect_failure 3 "above: its folders \(test, train\) hold folders, not images: data.testDirectory .*; set it to $WORK/above/test$" -- \
  run_small "$small" --set "data.testDirectory=$WORK/above"
nothing_written

# onBadFile: skip leaves the files out, counts and names them in the log.
fault skip && echo "not an image" >"$WORK/skip/a/0.png" && head -c 300 "$small/b/2.jpg" >"$WORK/skip/b/2.jpg"
run_small "$WORK/skip" --set data.onBadFile=skip --set output.console=epochs >"$WORK/skip.txt"
grep -q "data: skipped 2 in $WORK/skip (data.onBadFile: skip):" "$WORK/skip.txt" ||
  fail "skip: no count: $(head -8 "$WORK/skip.txt")"
grep -q "data:   skipped $WORK/skip/a/0.png: is not an image" "$WORK/skip.txt" ||
  fail "skip: 0.png not named: $(head -8 "$WORK/skip.txt")"
grep -q "data: 3 training and 3 test examples" "$WORK/skip.txt" || fail "skip: $(head -3 "$WORK/skip.txt")"
# summary.json names them too, for scripts that read the run afterwards.
skip_summary=$WORK/bad-run/summary.json
[ -f "$skip_summary" ] || fail "skip: no summary.json of the run"
"${PYTHON3:-/usr/bin/python3}" - "$skip_summary" "$WORK/skip" <<'PY' || fail "skip: summary.json lacks the skipped files"
import json, sys
names = json.load(open(sys.argv[1])).get("skipped_files", [])
want = [sys.argv[2] + "/a/0.png: is not an image", sys.argv[2] + "/b/2.jpg"]
sys.exit(0 if len(names) == 2 and names[0].startswith(want[0]) and names[1].startswith(want[1]) else 1)
PY
echo "ok: onBadFile: skip: $(grep -c 'skipped /' "$WORK/skip.txt") lines name the skipped files"
# Every file of a class bad: skip would leave the class without samples (an empty class folder is
# refused); it trained on as a class never seen.
fault skip_class && for f in "$WORK/skip_class/b/"*; do echo "not an image" >"$f"; done
expect_failure 3 "skip_class/b: none of the class folder's [0-9]+ files is a usable image" -- \
  run_small "$WORK/skip_class" --set data.onBadFile=skip --set "output.directory=$WORK/skip-class-run"
[ ! -e "$WORK/skip-class-run" ] || fail "a class of bad files left $WORK/skip-class-run"
