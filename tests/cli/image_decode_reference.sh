#!/usr/bin/env bash
# Image files as people have them, decoded as image folders decode them (decode_image, the
# readers' own decoder) against Pillow, which torchvision's ImageFolder and Keras read them with:
# PNG in every color type (gray, gray+alpha, RGB, RGBA, palette with and without transparency,
# 1-bit, 16-bit gray, Adam7-interlaced) and JPEG (baseline, progressive, gray, 4:4:4, 4:2:2,
# 4:2:0, CMYK as Photoshop writes it), odd sizes included, each read as RGB and as gray. Every
# pixel must equal Pillow's convert("RGB") / convert("L"), except 16-bit PNGs, where dl-train
# keeps each sample's high byte and Pillow clips the value to 255 (docs/CONFIG.md). Then PNGs of
# several sizes fitted to square inputs: `stretch` within one level of Pillow's bilinear resize,
# `centerCrop` within one level of torchvision's Resize + CenterCrop (checked against torchvision
# itself where it is installed).
source "$(dirname "$0")/lib.sh"
: "${DECODE_IMAGE:?DECODE_IMAGE must name the decode_image tool}"
: "${PYTHON3:?PYTHON3 must name python3 with Pillow}"
"$PYTHON3" -c "import PIL, numpy" 2>/dev/null || { echo "SKIP: python3-pil or numpy is not installed"; exit 77; }

"$PYTHON3" - "$DECODE_IMAGE" "$WORK" <<'PY' || fail "decoded pixels differ from Pillow's"
import io, subprocess, sys
import numpy as np
from PIL import Image

tool, work = sys.argv[1:3]
rng = np.random.default_rng(7)


def noise(h, w):
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")


def smooth(h, w):
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 7 % 256], -1)
    return Image.fromarray(rgb.astype(np.uint8), "RGB")


def files():
    for h, w in [(12, 10), (1, 1), (5, 17), (33, 31)]:
        for name, base in [("noise", noise(h, w)), ("smooth", smooth(h, w))]:
            tag = f"{name}-{h}x{w}"
            yield f"{tag}-rgb.png", base, "PNG", {}
            yield f"{tag}-gray.png", base.convert("L"), "PNG", {}
            yield f"{tag}-gray-alpha.png", base.convert("LA"), "PNG", {}
            yield f"{tag}-rgba.png", base.convert("RGBA"), "PNG", {}
            yield f"{tag}-palette.png", base.convert("P"), "PNG", {}
            yield f"{tag}-palette-trns.png", base.convert("P"), "PNG", {"transparency": 0}
            yield f"{tag}-1bit.png", base.convert("1"), "PNG", {}
            yield f"{tag}-interlaced.png", base, "PNG", {"interlace": 1}
            deep = Image.fromarray(rng.integers(0, 65536, (h, w)).astype(np.uint16))
            yield f"{tag}-gray16.png", deep, "PNG", {}
            yield f"{tag}.jpg", base, "JPEG", {"quality": 90}
            yield f"{tag}-progressive.jpg", base, "JPEG", {"quality": 90, "progressive": True}
            yield f"{tag}-gray.jpg", base.convert("L"), "JPEG", {"quality": 90}
            for sampling, label in [(0, "444"), (1, "422"), (2, "420")]:
                yield f"{tag}-{label}.jpg", base, "JPEG", {"quality": 75, "subsampling": sampling}
            yield f"{tag}-cmyk.jpg", base.convert("CMYK"), "JPEG", {"quality": 90}


def decoded(path, channels, *fit):
    """decode_image's pixels: HxW for gray, HxWx3 for RGB; `fit` is (height, width, mode)."""
    r = subprocess.run([tool, path, str(channels), *map(str, fit)], capture_output=True)
    if r.returncode != 0:
        raise SystemExit(f"{path}: decode_image failed: {r.stderr.decode().strip()}")
    head, _, data = r.stdout.partition(b"\n")
    w, h, c = map(int, head.split())
    return np.frombuffer(data, np.uint8).reshape((h, w, c) if c == 3 else (h, w))


checked = 0
for name, image, fmt, options in files():
    path = f"{work}/{name}"
    image.save(path, fmt, **options)
    reread = Image.open(path)
    for channels, mode in [(3, "RGB"), (1, "L")]:
        if reread.mode.startswith("I"):  # 16-bit gray: the high byte of each sample
            high = (np.asarray(reread).astype(np.int64) >> 8).astype(np.uint8)
            want = np.stack([high] * 3, -1) if channels == 3 else high
        else:
            want = np.asarray(reread.convert(mode))
        got = decoded(path, channels)
        if got.shape != want.shape or not np.array_equal(got, want):
            diff = np.abs(got.astype(int) - want.astype(int)) if got.shape == want.shape else None
            raise SystemExit(f"{name} ({reread.mode}) as {mode}: "
                             + (f"shape {got.shape}, Pillow {want.shape}" if diff is None else
                                f"{np.count_nonzero(diff)} of {diff.size} values differ, by up to {diff.max()}"))
        checked += 1
print(f"ok: {checked} decodings of {checked // 2} files equal Pillow's, pixel for pixel")


def center_crop(image, size):
    """torchvision's Resize(size) + CenterCrop(size) on a PIL image, written out."""
    w, h = image.size
    if w <= h:
        new_w, new_h = size, int(size * h / w)
    else:
        new_w, new_h = int(size * w / h), size
    resized = image.resize((new_w, new_h), Image.BILINEAR)
    top, left = int(round((new_h - size) / 2.0)), int(round((new_w - size) / 2.0))
    return resized.crop((left, top, left + size, top + size))


try:
    from torchvision import transforms  # the emulation above against the real thing
except ImportError:
    transforms = None
fits = 0
worst = 0
cases = [(h, w, kind, "png", [28, 32, 9])
         for h, w in [(40, 30), (100, 37), (17, 23), (256, 200), (64, 64), (9, 300)]
         for kind in ("noise", "smooth")]
# JPEGs that no scale of n/8 fits to 32 (7/8 of 36 or more would) are decoded at full size too.
cases += [(h, w, kind, "jpg", [32]) for h, w in [(35, 35), (34, 61), (33, 50)]
          for kind in ("noise", "smooth")]
for h, w, name, fmt, sizes in cases:
    path = f"{work}/fit-{name}-{h}x{w}.{fmt}"
    (noise(h, w) if name == "noise" else smooth(h, w)).save(path, quality=95)
    base = Image.open(path).convert("RGB")
    for size in sizes:
        crop = center_crop(base, size)
        if transforms is not None:
            real = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size)])(base)
            assert np.array_equal(np.asarray(real), np.asarray(crop)), "emulation != torchvision"
        for mode, want in [("stretch", base.resize((size, size), Image.BILINEAR)),
                           ("centerCrop", crop)]:
            got = decoded(path, 3, size, size, mode).astype(int)
            diff = np.abs(got - np.asarray(want).astype(int)).max()
            if diff > 1:
                raise SystemExit(f"{h}x{w} {name} fitted to {size}x{size} by {mode}: "
                                 f"{diff} levels from torchvision's pixels")
            worst = max(worst, diff)
            fits += 1
print(f"ok: {fits} fittings within {worst} level of Pillow's resize (stretch) and torchvision's "
      f"Resize + CenterCrop (centerCrop){'' if transforms else ' (as written out here)'}")
PY
