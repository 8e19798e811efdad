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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, TypeVar

import numpy as np
from PIL import ExifTags, Image, ImageOps, UnidentifiedImageError

ALLOWED_FORMATS = ("JPEG", "PNG", "BMP", "GIF", "TIFF", "WEBP", "PPM")
# The names of those formats' files, where a file is told from its name
# alone (labels beside the images); a file is read by its content.
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm"}
RESIZE_MODES = ("squash", "crop", "fill", "half_crop")
SCALING_MODES = ("crop", "fill", "half_crop")  # keep the aspect ratio, then crop or fill
# Bilinear with Pillow's reducing filter support gives smooth downscales at
# a fraction of LANCZOS' cost; datasets are resized once, trained on many times.
RESAMPLE = Image.Resampling.BILINEAR
TURNED_ORIENTATIONS = (5, 6, 7, 8)  # EXIF orientations that swap width and height

_Decoded = TypeVar("_Decoded")


class ImageError(Exception):
    """Why a file cannot be used; ``str(exc)`` is a short reason shown to users."""


def is_image(name: str) -> bool:
    """Whether a file's name is an image's (``IMAGE_SUFFIXES``)."""
    return PurePosixPath(name).suffix.lower() in IMAGE_SUFFIXES


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
    return _reading(source, lambda handle: _decode(handle, channels, draft, resize_mode, max_pixels))


def load_label_image(source: str | os.PathLike | bytes, max_pixels: int | None = None) -> Image.Image:
    """Decode a label image (``source``, a path or bytes) as shown (after its
    EXIF rotation) in the mode it is stored in: palette indices stay indices,
    16-bit values stay 16-bit. The same refusals as ``load_image_sized``."""
    return _reading(source, lambda handle: _decode_kept(handle, max_pixels))


def _reading(source: str | os.PathLike | bytes, decode: Callable[[IO[bytes]], _Decoded]) -> _Decoded:
    """``decode`` of the opened source, its failures as ``ImageError``."""
    try:
        if isinstance(source, bytes | bytearray):
            if not source:
                raise ImageError("empty file")
            return decode(io.BytesIO(source))
        if os.path.getsize(source) == 0:
            raise ImageError("empty file")
        with open(source, "rb") as handle:
            return decode(handle)
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


def _refuse_too_many(width: int, height: int, max_pixels: int | None) -> None:
    if max_pixels and width * height > max_pixels:
        raise ImageError(f"{width} × {height} is {width * height / 1e6:.1f} megapixels; "
                         f"at most {max_pixels / 1e6:.1f} megapixels are accepted")


def _decode_kept(handle: IO[bytes], max_pixels: int | None) -> Image.Image:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(handle, formats=ALLOWED_FORMATS) as image:
                image.seek(0)
                _refuse_too_many(*image.size, max_pixels)
                image.load()
                return ImageOps.exif_transpose(image)
        except Image.DecompressionBombWarning as exc:
            raise ImageError(f"refused as a possible decompression bomb: {exc}") from None


def _decode(handle, channels: int, draft: tuple[int, int] | None, resize_mode: str,
            max_pixels: int | None) -> tuple[Image.Image, tuple[int, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            with Image.open(handle, formats=ALLOWED_FORMATS) as image:
                image.seek(0)  # the first frame of an animation
                width, height = image.size
                _refuse_too_many(width, height, max_pixels)
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


@dataclass(frozen=True)
class Placement:
    """Where an image's pixels land in a resized one; ``resize`` applies it to
    pixels and ``trainer.detection.boxgeometry`` to boxes, so both move alike.

    In order: pad the image at the right and bottom with black to ``pad_to``
    (if given), scale that canvas to ``scaled``, then per axis crop from
    ``crop`` or place at ``pad`` (with noise around) in a ``size`` image.
    A point x of the image lands at ``x * scale + shift`` per axis.
    """

    image: tuple[int, int]  # the image's width and height
    pad_to: tuple[int, int] | None  # the canvas it is padded to first, or None
    scaled: tuple[int, int]  # the size the canvas is scaled to (rounded to whole pixels)
    crop: tuple[int, int]  # x, y of the first kept pixel of the scaled canvas; 0 where an axis is not cropped
    pad: tuple[int, int]  # x, y where the scaled canvas starts in the result; 0 where an axis is not padded
    size: tuple[int, int]  # the result's width and height

    @property
    def canvas(self) -> tuple[int, int]:
        """The size that is scaled: ``pad_to`` if given, else the image's."""
        return self.pad_to or self.image

    @property
    def scale(self) -> tuple[float, float]:
        """The scale applied per axis: the rounded scaled size over the canvas size (not the nominal scale)."""
        return self.scaled[0] / self.canvas[0], self.scaled[1] / self.canvas[1]

    @property
    def shift(self) -> tuple[int, int]:
        """Per axis, what is added to a scaled coordinate: the pad offset less the crop start."""
        return self.pad[0] - self.crop[0], self.pad[1] - self.crop[1]


def placement(image_width: int, image_height: int, width: int, height: int, mode: str,
              pad_to: tuple[int, int] | None = None) -> Placement:
    """The geometry of resizing an image_width × image_height image to width × height in ``mode`` (see ``resize``).

    Raises ValueError for an unknown mode or a size that is not positive, and
    ``ImageError`` (a per-image reason for the build's report) for an image
    larger than ``pad_to`` on either axis, as DIGITS refused it.
    """
    if mode not in RESIZE_MODES:
        raise ValueError(f"unknown resize mode {mode!r}; use one of {', '.join(RESIZE_MODES)}")
    if width <= 0 or height <= 0:
        raise ValueError("width and height must be positive")
    if pad_to is not None:
        pad_to = (int(pad_to[0]), int(pad_to[1]))
        if pad_to[0] <= 0 or pad_to[1] <= 0:
            raise ValueError("the padding width and height must be positive")
        if image_width > pad_to[0] or image_height > pad_to[1]:
            raise ImageError(f"{image_width}×{image_height} is larger than the padding size {pad_to[0]}×{pad_to[1]}")
    canvas = pad_to or (image_width, image_height)
    if mode == "squash" or canvas == (width, height):
        scaled = (width, height)
    else:
        scaled = _scaled_size(canvas, _scale(mode, width, height, *canvas))
    crop = tuple(max(0, (have - want) // 2) for have, want in zip(scaled, (width, height), strict=True))
    pad = tuple(max(0, (want - have) // 2) for have, want in zip(scaled, (width, height), strict=True))
    return Placement((image_width, image_height), pad_to, scaled, crop, pad, (width, height))


def _fit_axis(pixels: np.ndarray, axis: int, target: int, crop: int, pad: int,
              border: Callable[[list[int]], np.ndarray]) -> np.ndarray:
    """Crop one axis to ``target`` from ``crop``, or pad it to ``target`` placing
    it at ``pad`` in an array ``border`` makes of the padded shape."""
    have = pixels.shape[axis]
    if have > target:
        return pixels.take(range(crop, crop + target), axis=axis)
    if have < target:
        shape = list(pixels.shape)
        shape[axis] = target
        out = border(shape)
        index = [slice(None)] * 3
        index[axis] = slice(pad, pad + have)
        out[tuple(index)] = pixels
        return out
    return pixels


def place(image: Image.Image, where: Placement, rng: np.random.Generator) -> np.ndarray:
    """Apply ``where`` (made for this image's size) to the pixels: (height, width, channels) uint8.

    Padding to ``where.pad_to`` is black; the border of fill and half_crop is
    noise drawn from ``rng``, so a seed gives the same pixels every time.
    """
    if image.size != where.image:
        raise ValueError(f"the placement is for a {where.image[0]}×{where.image[1]} image, not {image.width}×{image.height}")
    if where.pad_to is not None and where.pad_to != image.size:
        canvas = Image.new(image.mode, where.pad_to)  # black
        canvas.paste(image, (0, 0))
        image = canvas
    if image.size != where.scaled:
        image = image.resize(where.scaled, RESAMPLE)

    def noise(shape: list[int]) -> np.ndarray:
        return _noise(rng, *shape)

    pixels = _fit_axis(to_array(image), 0, where.size[1], where.crop[1], where.pad[1], noise)
    return _fit_axis(pixels, 1, where.size[0], where.crop[0], where.pad[0], noise)


def place_labels(labels: np.ndarray, where: Placement, fill: int) -> np.ndarray:
    """Apply ``where`` to a label image (H×W uint8, one value a pixel: a
    class index) exactly as ``place`` applies it to its image's pixels, by
    nearest neighbour so that no value is made up: the same pixel centres
    are sampled, so a label stays over the pixels it labels. Padding and the
    border of fill and half_crop are ``fill``. Returns (height, width) uint8."""
    if labels.shape[::-1] != where.image:
        raise ValueError(f"the placement is for a {where.image[0]}×{where.image[1]} image, not "
                         f"{labels.shape[1]}×{labels.shape[0]}")
    image = Image.fromarray(np.ascontiguousarray(labels, dtype=np.uint8), "L")
    if where.pad_to is not None and where.pad_to != image.size:
        canvas = Image.new("L", where.pad_to, fill)
        canvas.paste(image, (0, 0))
        image = canvas
    if image.size != where.scaled:
        image = image.resize(where.scaled, Image.Resampling.NEAREST)

    def filled(shape: list[int]) -> np.ndarray:
        return np.full(shape, fill, dtype=np.uint8)

    placed = _fit_axis(to_array(image), 0, where.size[1], where.crop[1], where.pad[1], filled)
    return _fit_axis(placed, 1, where.size[0], where.crop[0], where.pad[0], filled)[:, :, 0]


def resize(image: Image.Image, width: int, height: int, mode: str, rng: np.random.Generator,
           pad_to: tuple[int, int] | None = None) -> np.ndarray:
    """Resize to (height, width, channels) the way NVIDIA DIGITS did:

    - squash: to the size, ignoring the aspect ratio;
    - crop: scale to cover the size, keep the centre;
    - fill: scale to fit inside, fill the border with noise;
    - half_crop: scale halfway between crop and fill, then crop or fill each axis.

    With ``pad_to`` (DIGITS' detection padding), the image is first padded at
    the right and bottom with black to that size; a larger image raises ``ImageError``.
    """
    return place(image, placement(image.width, image.height, width, height, mode, pad_to), rng)
