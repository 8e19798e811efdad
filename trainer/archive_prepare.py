"""Prepare a photo as digitslike's dataset build prepared the images a
detector or a segmenter learnt from, for the model archive's scripts
(``detect.py``, ``segment.py``), which import it as ``prepare.py`` beside
them: needs only numpy and Pillow.

The photo is turned upright by its EXIF orientation, converted to the
model's channels (``info["pil_mode"]``: 8-bit L or RGB, transparency over
black), padded at the right and bottom with black to the build's padding
size (if it had one), resized with its dataset's mode (the border of fill
and half_crop is seeded noise), and normalised as the app does (pixels / 255
minus ``mean.npy`` / 255). It is decoded at full size, as the build decodes
a segmentation dataset's images (a detection build decodes large JPEGs at a
reduced scale, which changes their pixels a little, not where they land).
``placement`` says where each photo pixel lands: per axis the resize scales
by ``scale`` and moves by ``shift``.
"""

import numpy as np
from PIL import Image, ImageOps


def convert(image, target):
    """8-bit "L" or "RGB": transparency over black, 16-bit and float pixels scaled, not clipped."""
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
    return image if image.mode == target else image.convert(target)


def decode(path, target):
    with Image.open(path) as image:
        image.seek(0)  # the first frame of an animation
        image.load()
        return convert(ImageOps.exif_transpose(image), target)


def placement(width, height, info):
    """Where a width×height photo's pixels land in the prepared image: the
    canvas it is padded to, the size that is scaled to, and per axis the
    crop start and the padding offset of the centring."""
    target = info["image_width"], info["image_height"]
    canvas = (info["pad_width"], info["pad_height"]) if info["pad_width"] else (width, height)
    if width > canvas[0] or height > canvas[1]:
        raise SystemExit(f"The image ({width}×{height}) is larger than the padding size {canvas[0]}×{canvas[1]}.")
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


def placed(path, info):
    """The photo at the dataset's image size, H×W×C uint8, and its ``placement``."""
    image = decode(path, info["pil_mode"])
    where = placement(image.width, image.height, info)
    if where["canvas"] != image.size:
        canvas = Image.new(image.mode, where["canvas"])  # black
        canvas.paste(image, (0, 0))
        image = canvas
    if image.size != where["scaled"]:
        image = image.resize(where["scaled"], Image.BILINEAR)
    rng = np.random.default_rng(info["fill_seed"])  # the same border noise every time
    pixels = np.asarray(image, np.uint8).reshape(image.height, image.width, -1)
    pixels = fit_axis(pixels, 0, info["image_height"], where["crop"][1], where["pad"][1], rng)
    pixels = fit_axis(pixels, 1, info["image_width"], where["crop"][0], where["pad"][0], rng)
    return pixels, where


def normalised(pixels):
    """H×W×C uint8 pixels as the network takes them, C×H×W float32: pixels / 255 minus mean.npy / 255."""
    mean = np.load("mean.npy").astype(np.float32)  # a mean image, or a mean pixel (1×1×C)
    x = pixels.astype(np.float32) / np.float32(255) - mean / np.float32(255)
    return x.transpose(2, 0, 1).astype(np.float32)
