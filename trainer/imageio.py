"""Decoding and resizing images for datasets, safely.

The type of a file is decided by its content, never its name; Pillow's
decompression-bomb limit stays on (and its warning counts as a refusal); a
file that cannot be used raises ``ImageError`` with a short reason for the
build's skipped-file report. Every mode Pillow decodes (palette, CMYK,
16-bit, alpha, bilevel) is converted to 8-bit grayscale or RGB correctly.
"""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

ALLOWED_FORMATS = ("JPEG", "PNG", "BMP", "GIF", "TIFF", "WEBP", "PPM")
RESIZE_MODES = ("squash", "crop", "fill", "half_crop")
SCALING_MODES = ("crop", "fill", "half_crop")  # keep the aspect ratio, then crop or fill
# Bilinear with Pillow's reducing filter support gives smooth downscales at
# a fraction of LANCZOS' cost; datasets are resized once, trained on many times.
RESAMPLE = Image.Resampling.BILINEAR
TURNED_ORIENTATIONS = (5, 6, 7, 8)  # EXIF orientations that swap width and height


class ImageError(Exception):
    """Why a file cannot be used; ``str(exc)`` is a short reason shown to users."""


def load_image(source: str | os.PathLike | bytes, channels: int, draft: tuple[int, int] | None = None,
               resize_mode: str = "squash", max_pixels: int | None = None) -> Image.Image:
    """Decode ``source`` (a path or bytes): ``load_image_sized``'s image."""
    return load_image_sized(source, channels, draft, resize_mode, max_pixels)[0]


def load_image_sized(source: str | os.PathLike | bytes, channels: int, draft: tuple[int, int] | None = None,
                     resize_mode: str = "squash",
                     max_pixels: int | None = None) -> tuple[Image.Image, tuple[int, int]]:
    """Decode ``source`` (a path or bytes) into mode "L" (channels 1) or "RGB" (3),
    with the width and height the file's image has as shown (after its EXIF
    rotation), which a JPEG ``draft`` decode makes larger than the decoded one.

    ``max_pixels`` refuses a larger image from the size in its header, before
    any pixel is decoded: a PNG of a few hundred KB may hold 81 megapixels,
    seconds of decoding and hundreds of MB, yet below Pillow's bomb limit.

    ``draft`` (the target width and height of a later ``resize`` in
    ``resize_mode``) lets JPEG decoding skip detail that the resize would
    throw away (DCT scaling by 2, 4 or 8): the decoded image stays at least
    as large as the resize scales it to, so the resize still only shrinks.
    """
    try:
        if isinstance(source, bytes | bytearray):
            if not source:
                raise ImageError("empty file")
            return _decode(io.BytesIO(source), channels, draft, resize_mode, max_pixels)
        if os.path.getsize(source) == 0:
            raise ImageError("empty file")
        with open(source, "rb") as handle:
            return _decode(handle, channels, draft, resize_mode, max_pixels)
    except ImageError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageError(f"refused as a possible decompression bomb: {exc}") from None
    except UnidentifiedImageError:
        raise ImageError("not an image (or a format that is not accepted)") from None
    except OSError as exc:
        if exc.errno is not None:
            raise ImageError(f"cannot read: {exc.strerror}") from None
        raise ImageError(f"truncated or corrupt image: {exc}") from None
    except (ValueError, SyntaxError, EOFError, MemoryError) as exc:
        raise ImageError(f"truncated or corrupt image: {exc}") from None


def _decode(handle, channels: int, draft: tuple[int, int] | None, resize_mode: str,
            max_pixels: int | None) -> tuple[Image.Image, tuple[int, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(handle, formats=ALLOWED_FORMATS) as image:
                image.seek(0)  # the first frame of an animation
                width, height = image.size
                if max_pixels and width * height > max_pixels:
                    raise ImageError(f"{width} × {height} is {width * height / 1e6:.1f} megapixels; "
                                     f"at most {max_pixels / 1e6:.1f} megapixels are accepted")
                turned = image.getexif().get(ExifTags.Base.Orientation, 1) in TURNED_ORIENTATIONS
                shown = (height, width) if turned else (width, height)
                if draft and image.format == "JPEG":
                    image.draft("L" if channels == 1 else "RGB", _draft_size(image, turned, *draft, resize_mode))
                image.load()
                return convert(ImageOps.exif_transpose(image), channels), shown
        except Image.DecompressionBombWarning as exc:
            raise ImageError(f"refused as a possible decompression bomb: {exc}") from None


def _draft_size(image: Image.Image, turned: bool, width: int, height: int, mode: str) -> tuple[int, int]:
    """The size the resize will scale the stored image to, in the stored orientation (before the
    EXIF rotation that ``exif_transpose`` applies after decoding; ``turned``: it swaps the axes)."""
    stored_w, stored_h = image.size
    shown_w, shown_h = (stored_h, stored_w) if turned else (stored_w, stored_h)
    scaled = (width, height) if mode not in SCALING_MODES else _scaled_size((shown_w, shown_h), _scale(mode, width, height,
                                                                                              shown_w, shown_h))
    return (scaled[1], scaled[0]) if turned else scaled


def convert(image: Image.Image, channels: int) -> Image.Image:
    """To 8-bit "L" or "RGB": transparency over black, 16-bit scaled (not clipped)."""
    target = "L" if channels == 1 else "RGB"
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        pixels = np.asarray(image, dtype=np.float64)
        image = Image.fromarray(np.clip(np.rint(pixels / 257), 0, 255).astype(np.uint8), "L")
    elif image.mode == "F":
        pixels = np.asarray(image, dtype=np.float64)
        top = 1.0 if pixels.max(initial=0) <= 1.0 else 255.0
        image = Image.fromarray(np.clip(np.rint(pixels * 255 / top), 0, 255).astype(np.uint8), "L")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (0, 0, 0, 255))
        image = Image.alpha_composite(background, rgba).convert("RGB")
    return image if image.mode == target else image.convert(target)


def to_array(image: Image.Image) -> np.ndarray:
    """(H, W, C) uint8; C is 1 for "L"."""
    pixels = np.asarray(image, dtype=np.uint8)
    return pixels[:, :, None] if pixels.ndim == 2 else pixels


def _noise(rng: np.random.Generator, height: int, width: int, channels: int) -> np.ndarray:
    return rng.integers(0, 256, size=(height, width, channels), dtype=np.uint8)


def _scale(mode: str, width: int, height: int, image_width: int, image_height: int) -> float:
    """How much crop, fill and half_crop scale an image before cropping or filling it."""
    cover = max(width / image_width, height / image_height)
    fit = min(width / image_width, height / image_height)
    return {"crop": cover, "fill": fit, "half_crop": (cover + fit) / 2}[mode]


def _scaled_size(size: tuple[int, int], scale: float) -> tuple[int, int]:
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _scaled(image: Image.Image, scale: float) -> Image.Image:
    size = _scaled_size(image.size, scale)
    return image if size == image.size else image.resize(size, RESAMPLE)


def _fit_axis(pixels: np.ndarray, axis: int, target: int, rng: np.random.Generator) -> np.ndarray:
    """Centre-crop or centre-pad (with noise) one axis to ``target``."""
    have = pixels.shape[axis]
    if have > target:
        start = (have - target) // 2
        return pixels.take(range(start, start + target), axis=axis)
    if have < target:
        before = (target - have) // 2
        shape = list(pixels.shape)
        shape[axis] = target
        out = _noise(rng, *shape)
        index = [slice(None)] * 3
        index[axis] = slice(before, before + have)
        out[tuple(index)] = pixels
        return out
    return pixels


def resize(image: Image.Image, width: int, height: int, mode: str, rng: np.random.Generator) -> np.ndarray:
    """Resize to (height, width, channels) the way NVIDIA DIGITS did:

    - squash: to the size, ignoring the aspect ratio;
    - crop: scale to cover the size, keep the centre;
    - fill: scale to fit inside, fill the border with noise;
    - half_crop: scale halfway between crop and fill, then crop or fill each axis.
    """
    if mode not in RESIZE_MODES:
        raise ValueError(f"unknown resize mode {mode!r}; use one of {', '.join(RESIZE_MODES)}")
    if width <= 0 or height <= 0:
        raise ValueError("width and height must be positive")
    if image.size == (width, height):
        return to_array(image)
    if mode == "squash":
        return to_array(image.resize((width, height), RESAMPLE))
    pixels = to_array(_scaled(image, _scale(mode, width, height, image.width, image.height)))
    return _fit_axis(_fit_axis(pixels, 0, height, rng), 1, width, rng)

