"""An image as the network of a ``Loaded`` model sees it: decoded safely
(``trainer.imageio``: the type from the content, the decompression-bomb
limit on), converted to the dataset's channels (a grayscale image for a
colour model and the reverse), padded and resized with the dataset's
padding size and resize mode by the dataset build's own code (``placed``
keeps that placement, for Detect one to take boxes back through), then
mean-subtracted and centre-cropped by the training loader's ``Normalizer``."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from trainer.augment import centre_crop, take
from trainer.detection.boxgeometry import decode_factors
from trainer.imageio import ImageError, Placement, load_image_sized, place, placement

from .errors import InferenceError
from .model import Loaded

MAX_IMAGE_BYTES = 64 * 2**20
# The most pixels an image to classify (one, many, an evaluation's) may have,
# read from its header before it is decoded; the model server answers one
# request at a time, and one huge image would hold everyone's up.
MAX_PIXELS = int(os.environ.get("CLASSIFY_MAX_PIXELS") or 40_000_000)
FILL_SEED = 0  # the noise the "fill" and "half_crop" modes pad with: the same every time

Source = str | os.PathLike | bytes


@dataclass
class Prepared:
    """``tensor``: the network input, float32 C×h×w; ``pixels``: the image
    after the resize and crop (uint8 h×w×C); ``seen``: the input as the
    network saw it, the mean subtracted, stretched to 0..255 for display
    (uint8 h×w×C)."""

    tensor: torch.Tensor
    pixels: np.ndarray
    seen: np.ndarray


def _size_of(source: Source) -> int:
    if isinstance(source, bytes | bytearray):
        return len(source)
    try:
        return os.path.getsize(source)
    except OSError as exc:
        raise InferenceError(f"The image cannot be read: {exc.strerror}") from None


@dataclass
class Placed:
    """An image resized for the model, and what takes a point of it back to
    the image: ``where`` placed the decoded image, which a JPEG draft decode
    made ``factors`` (per axis) smaller than the image as ``shown`` (its
    width and height)."""

    pixels: np.ndarray
    where: Placement
    factors: np.ndarray
    shown: tuple[int, int]


def placed(loaded: Loaded, source: Source) -> Placed:
    """``source`` (a path or the file's bytes) resized for the model as the
    dataset build resized it (``trainer.build_pool.decode``): uint8 H×W×C at
    the dataset's image size, padded first to the build's padding size if it
    had one (then decoded without a draft: a padding size is in the source's
    pixels)."""
    if _size_of(source) > MAX_IMAGE_BYTES:
        raise InferenceError(f"The image is larger than {MAX_IMAGE_BYTES // 2**20} MiB.")
    height, width = loaded.image_size
    try:
        drafted = loaded.task.targets.allows_draft and not loaded.pad_to
        image, shown = load_image_sized(bytes(source) if isinstance(source, bytearray) else source, loaded.channels,
                                        draft=(width, height) if drafted else None,
                                        resize_mode=loaded.resize_mode, max_pixels=MAX_PIXELS)
        where = placement(*image.size, width, height, loaded.resize_mode, loaded.pad_to)
    except ImageError as exc:
        raise InferenceError(f"The file cannot be used as an image: {exc}.") from None
    pixels = place(image, where, np.random.default_rng(FILL_SEED))
    pixels = pixels if pixels.flags.writeable else pixels.copy()  # Pillow's pixels are read-only; torch wants them writable
    return Placed(pixels, where, decode_factors(shown, image.size), shown)


def decode(loaded: Loaded, source: Source) -> np.ndarray:
    """``source`` resized for the model: ``placed``'s pixels."""
    return placed(loaded, source).pixels


def normalize(loaded: Loaded, pixels: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Network input (float32 N×C×h×w on the model's device) of uint8 N×H×W×C images."""
    batch = torch.as_tensor(pixels).to(loaded.device)
    return loaded.normalizer(batch)


def for_display(x: torch.Tensor) -> np.ndarray:
    """One network input (C×h×w) stretched to its own range, as uint8 h×w×C."""
    low, high = x.min(), x.max()
    scaled = (x - low) / (high - low).clamp_min(1e-12) * 255
    return scaled.round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()


def preprocess(loaded: Loaded, source: Source) -> Prepared:
    """``source`` ready for ``loaded`` (see the module's docstring)."""
    pixels = decode(loaded, source)
    x = normalize(loaded, pixels[None])[0]
    cropped = take(torch.from_numpy(pixels)[None], None, centre_crop(*pixels.shape[:2], loaded.normalizer.crop, "cpu"))
    return Prepared(tensor=x, pixels=cropped[0].numpy(), seen=for_display(x))
