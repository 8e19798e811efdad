"""Detect objects in one image with an unpacked model archive:
python detect.py IMAGE [MIN_SCORE]

Run in the archive's folder; needs only numpy, Pillow and onnxruntime. The
image is prepared as digitslike's dataset build prepared the images the
model learnt from: turned upright by its EXIF orientation, converted to RGB,
padded at the right and bottom with black to the build's padding size (if
it had one), resized with its dataset's mode (the border of fill and
half_crop is seeded noise), the mean subtracted. JPEGs are decoded at full
size (the build decodes large ones at a reduced scale, which changes their
pixels a little, not where they land). The model's boxes are in the
prepared image's pixels; ``to_photo`` undoes the resize, so the printed
boxes (x1, y1, x2, y2) are in the photo's pixels. Prints the detections
scoring at least MIN_SCORE (default 0.5), best first: class, score, box.
"""

import json
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageOps


def convert(image):
    """8-bit RGB: transparency over black, 16-bit and float pixels scaled, not clipped."""
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        image = Image.fromarray(np.clip(np.rint(np.asarray(image, np.float64) / 257), 0, 255).astype(np.uint8), "L")
    elif image.mode == "F":
        pixels = np.asarray(image, np.float64)
        top = 1.0 if pixels.max(initial=0) <= 1.0 else 255.0
        image = Image.fromarray(np.clip(np.rint(pixels * 255 / top), 0, 255).astype(np.uint8), "L")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (0, 0, 0, 255)), rgba).convert("RGB")
    return image if image.mode == "RGB" else image.convert("RGB")


def decode(path):
    with Image.open(path) as image:
        image.seek(0)  # the first frame of an animation
        image.load()
        return convert(ImageOps.exif_transpose(image))


def placement(width, height, info):
    """Where a width×height photo's pixels land in the prepared image: the
    canvas it is padded to, the size that is scaled to, and per axis the
    crop start and the padding offset of the centring."""
    target = info["image_width"], info["image_height"]
    canvas = (info["pad_width"], info["pad_height"]) if info["pad_width"] else (width, height)
    if width > canvas[0] or height > canvas[1]:
        sys.exit(f"The image ({width}×{height}) is larger than the padding size {canvas[0]}×{canvas[1]}.")
    if info["resize_mode"] == "squash" or canvas == target:
        scaled = target
    else:
        cover = max(target[0] / canvas[0], target[1] / canvas[1])
        fit = min(target[0] / canvas[0], target[1] / canvas[1])
        factor = {"crop": cover, "fill": fit, "half_crop": (cover + fit) / 2}[info["resize_mode"]]
        scaled = max(1, round(canvas[0] * factor)), max(1, round(canvas[1] * factor))
    crop = [max(0, (have - want) // 2) for have, want in zip(scaled, target, strict=True)]
    pad = [max(0, (want - have) // 2) for have, want in zip(scaled, target, strict=True)]
    return {"photo": (width, height), "canvas": canvas, "scaled": scaled, "crop": crop, "pad": pad,
            "scale": (scaled[0] / canvas[0], scaled[1] / canvas[1]), "shift": (pad[0] - crop[0], pad[1] - crop[1])}


def fit_axis(pixels, axis, target, crop, pad, rng):
    """Crop one axis to ``target`` from ``crop``, or pad it with noise to ``target``, placed at ``pad``."""
    have = pixels.shape[axis]
    if have > target:
        return pixels.take(range(crop, crop + target), axis=axis)
    if have < target:
        shape = list(pixels.shape)
        shape[axis] = target
        out = rng.integers(0, 256, size=shape, dtype=np.uint8)
        index = [slice(None)] * 3
        index[axis] = slice(pad, pad + have)
        out[tuple(index)] = pixels
        return out
    return pixels


def prepare(path, info):
    """The model's input, 3×H×W float32 (pixels / 255 minus mean.npy / 255), and its ``placement``."""
    image = decode(path)
    where = placement(image.width, image.height, info)
    if where["canvas"] != image.size:
        canvas = Image.new("RGB", where["canvas"])  # black
        canvas.paste(image, (0, 0))
        image = canvas
    if image.size != where["scaled"]:
        image = image.resize(where["scaled"], Image.BILINEAR)
    rng = np.random.default_rng(info["fill_seed"])  # the same border noise every time
    pixels = np.asarray(image, np.uint8)
    pixels = fit_axis(pixels, 0, info["image_height"], where["crop"][1], where["pad"][1], rng)
    pixels = fit_axis(pixels, 1, info["image_width"], where["crop"][0], where["pad"][0], rng)
    mean = np.load("mean.npy").astype(np.float32)  # a mean image, or a mean pixel (1×1×3)
    x = pixels.astype(np.float32) / np.float32(255) - mean / np.float32(255)
    return x.transpose(2, 0, 1).astype(np.float32), where


def to_photo(boxes, where):
    """Boxes (N×4, x1 y1 x2 y2) of the prepared image in the photo's pixels, clipped to the photo."""
    (scale_x, scale_y), (shift_x, shift_y), (width, height) = where["scale"], where["shift"], where["photo"]
    boxes = (np.asarray(boxes, np.float64).reshape(-1, 4) - [shift_x, shift_y, shift_x, shift_y]) / [
        scale_x, scale_y, scale_x, scale_y]
    return np.clip(boxes, 0, [width, height, width, height])


def main(path, min_score=0.5):
    with open("info.json", encoding="utf-8") as handle:
        info = json.load(handle)
    with open("labels.txt", encoding="utf-8") as handle:
        labels = handle.read().splitlines()
    image, where = prepare(path, info)
    boxes, scores, classes = ort.InferenceSession("model.onnx").run(None, {info["input"]: image})
    for box, score, label in zip(to_photo(boxes, where), scores, classes, strict=True):
        if score >= min_score:
            print(labels[label], f"{score:.6f}", *(f"{value:.3f}" for value in box), sep="\t")


if __name__ == "__main__":
    main(sys.argv[1], *(float(value) for value in sys.argv[2:3]))
