"""Classify one image with an unpacked model archive: python classify.py IMAGE

Run in the archive's folder, beside its ``prepare.py`` (whose ``convert``
makes the model's channels and ``fit_axis`` crops or pads an axis); needs
only numpy, Pillow and onnxruntime. The
image is prepared exactly as digitslike prepares it: a JPEG decoded at the
smallest scale that still covers the size the resize makes of it, turned
upright by its EXIF orientation, converted to the model's channels, resized
with its dataset's mode, the mean subtracted, centre-cropped. Prints the top
five classes with their probabilities.
"""

import json
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageOps
from prepare import convert, fit_axis

ORIENTATION = 0x0112  # the EXIF tag; orientations 5 to 8 swap width and height


def scale(mode, width, height, image_width, image_height):
    """How much crop, fill and half_crop scale an image before cropping or filling it."""
    cover = max(width / image_width, height / image_height)
    fit = min(width / image_width, height / image_height)
    return {"crop": cover, "fill": fit, "half_crop": (cover + fit) / 2}[mode]


def scaled_size(size, factor):
    return max(1, round(size[0] * factor)), max(1, round(size[1] * factor))


def decode(path, info):
    width, height, mode = info["image_width"], info["image_height"], info["resize_mode"]
    with Image.open(path) as image:
        image.seek(0)  # the first frame of an animation
        if image.format == "JPEG":
            turned = image.getexif().get(ORIENTATION, 1) in (5, 6, 7, 8)
            shown = image.size[::-1] if turned else image.size
            size = (width, height) if mode == "squash" else scaled_size(shown, scale(mode, width, height, *shown))
            image.draft(info["pil_mode"], size[::-1] if turned else size)
        image.load()
        return convert(ImageOps.exif_transpose(image), info["pil_mode"])


def centred(pixels, axis, target, rng):
    """Centre-crop or centre-pad (with noise) one axis to ``target``."""
    have = pixels.shape[axis]
    return fit_axis(pixels, axis, target, max(0, (have - target) // 2), max(0, (target - have) // 2), rng)


def resize(image, info):
    """H×W×C uint8 at the dataset's image size, in its resize mode (squash, crop, fill or half_crop)."""
    width, height, mode = info["image_width"], info["image_height"], info["resize_mode"]
    if image.size != (width, height) and mode == "squash":
        image = image.resize((width, height), Image.BILINEAR)
    elif image.size != (width, height):
        size = scaled_size(image.size, scale(mode, width, height, *image.size))
        image = image if size == image.size else image.resize(size, Image.BILINEAR)
    pixels = np.asarray(image, np.uint8).reshape(image.height, image.width, -1)
    rng = np.random.default_rng(info["fill_seed"])  # the same padding noise every time
    return centred(centred(pixels, 0, height, rng), 1, width, rng)


def prepare(path, info):
    """The network's input, 1×C×h×w float32: pixels / 255 minus mean.npy / 255, centre-cropped."""
    pixels, mean = resize(decode(path, info), info), np.load("mean.npy")
    top, left = (info["image_height"] - info["height"]) // 2, (info["image_width"] - info["width"]) // 2
    window = (slice(top, top + info["height"]), slice(left, left + info["width"]))
    mean = mean[window] if mean.shape[:2] == pixels.shape[:2] else mean  # a mean image, or a mean pixel
    x = pixels[window].astype(np.float32) / np.float32(255) - mean.astype(np.float32) / np.float32(255)
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def main(path):
    with open("info.json", encoding="utf-8") as handle:
        info = json.load(handle)
    with open("labels.txt", encoding="utf-8") as handle:
        labels = handle.read().splitlines()
    logits = ort.InferenceSession("model.onnx").run(None, {info["input"]: prepare(path, info)})[0][0].astype(np.float64)
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    for index in np.argsort(-probabilities, kind="stable")[:5]:
        print(f"{labels[index]}\t{probabilities[index]:.6f}")


if __name__ == "__main__":
    main(sys.argv[1])
