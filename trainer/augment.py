"""Data augmentation as batched tensor operations on the training device.

Nothing here loops over images: every random choice is drawn for the whole
batch at once from one ``torch.Generator`` on the device (so no host-device
synchronisation), and the generator's state is checkpointed for an exact
resume.

The work is split in three parts so that the loader can run them around the
mean subtraction without extra passes over the pixels:

- ``positions``: translation (reflect-padded random crop back to size),
  random crop (centre crop in evaluation) and flips are pure re-indexings
  (the ``alternating`` flip is airbench's: a fixed half of the images,
  chosen by a hash of their number in the split and the seed, is mirrored in
  even epochs and the other half in odd ones);
  they come out as per-image row and column indices into the full image,
  applied by one gather (``take``) straight from the stored pixels, and the
  image mean is gathered at the same places (so it is subtracted from the
  full-size image before cropping, as it should be);
- ``photometric``: colour jitter and gaussian noise, on pixels in [0, 1];
- ``spatial``: rotation and scale, one ``affine_grid``/``grid_sample`` for
  the batch (after mean subtraction, so the corners fill with the mean);
  its grid (``spatial_grid``) is what a task whose targets are places in
  the image resamples them with.

``__call__`` runs all three on a float batch of [0, 1] pixels. How a batch's
pixels moved, for its targets to follow, is a ``Moved``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

FLIPS = ("none", "horizontal", "vertical", "both", "alternating")
HASH_MULTIPLIER = 0x9E3779B1  # Knuth's multiplicative hash: its top bit halves any run of image numbers
GREY = (0.299, 0.587, 0.114)  # ITU-R 601 luma, as torchvision and PIL use

Positions = tuple[Tensor, Tensor]


@dataclass(frozen=True)
class Moved:
    """How a batch's pixels moved: re-indexed at ``positions`` (crops,
    translations, flips; None where they stayed put), then resampled on
    ``grid`` (rotation and zoom, N×h×w×2 in ``grid_sample``'s coordinates;
    None without)."""

    positions: Positions | None
    grid: Tensor | None = None


class Augment:
    """The augmentation of a training job's params (``crop``, ``translate``,
    ``flip``, ``rotation``, ``scale``, ``noise``, ``color_jitter``).

    With ``train=False`` only the centre crop remains and nothing is random.
    """

    def __init__(self, config: dict[str, Any], generator_seed: int, device: torch.device | str, train: bool = True) -> None:
        crop = config.get("crop") or None
        self.translate = int(config.get("translate") or 0)
        self.flip = config.get("flip") or "none"
        self.rotation = float(config.get("rotation") or 0.0)
        self.scale = float(config.get("scale") or 0.0)
        self.noise = float(config.get("noise") or 0.0)
        self.color_jitter = float(config.get("color_jitter") or 0.0)
        if self.flip not in FLIPS:
            raise ValueError(f"flip must be one of {', '.join(FLIPS)}, not {self.flip!r}")
        if crop is not None and (crop != int(crop) or crop < 1):
            raise ValueError(f"crop must be a positive whole number of pixels, not {crop}")
        self.crop = None if crop is None else int(crop)
        if min(self.translate, self.rotation, self.scale, self.noise, self.color_jitter) < 0:
            raise ValueError("translate, rotation, scale, noise and color_jitter cannot be negative")
        if self.scale >= 1:
            raise ValueError(f"scale must be under 1 (a zoom factor in [1 - scale, 1 + scale]), not {self.scale}")
        self.train = train
        self.flip_salt = int(config.get("seed") or 0) * HASH_MULTIPLIER
        self.device = torch.device(device)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(generator_seed)

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """The network's input size for images of ``height`` × ``width``."""
        if self.crop is None:
            return height, width
        if self.crop > min(height, width):
            raise ValueError(f"The crop size {self.crop} is larger than the images ({height}×{width}).")
        return self.crop, self.crop

    def positions(self, n: int, height: int, width: int, images: Tensor | None = None, epoch: int = 0) -> Positions | None:
        """Where each output pixel of ``n`` images comes from: rows (``n``×h or
        1×h) and columns (``n``×w or 1×w) of the full image; None when the
        images stay as they are. ``images``: their numbers in the split (on
        the device) and ``epoch``, which the alternating flip needs."""
        out_h, out_w = self.output_size(height, width)
        if not self.train:
            return centre_crop(height, width, self.crop, self.device)
        vertical = self.flip in ("vertical", "both")
        horizontal = self.flip in ("horizontal", "both", "alternating")
        if (out_h, out_w) == (height, width) and not self.translate and not vertical and not horizontal:
            return None
        rows = self._axis(n, height, out_h, (lambda: self._random_flips(n)) if vertical else None)
        return rows, self._axis(n, width, out_w, (lambda: self._horizontal_flips(n, images, epoch)) if horizontal else None)

    def _horizontal_flips(self, n: int, images: Tensor | None, epoch: int) -> Tensor:
        if self.flip != "alternating":
            return self._random_flips(n)
        if images is None:
            raise ValueError("the alternating flip needs the images' numbers in the split")
        return (self.alternate_half(images) ^ (epoch % 2)).bool()[:, None]

    def alternate_half(self, images: Tensor) -> Tensor:
        """1 for the images (numbers in the split) the alternating flip
        mirrors in even epochs, 0 for the others."""
        return ((images * HASH_MULTIPLIER + self.flip_salt) % 2**32) >> 31

    def _random_flips(self, n: int) -> Tensor:
        return self._rand(n, 1) < 0.5

    def _axis(self, n: int, size: int, out: int, flips: Callable[[], Tensor] | None) -> Tensor:
        """Indices along one axis: a random crop window, shifted by a random
        translation with reflection at the borders, reversed where ``flips()``
        (n×1, drawn after the shifts) holds True."""
        index = torch.arange(out, device=self.device)[None]
        if size > out:
            index = index + self._randint(0, size - out + 1, n)
        if self.translate:
            index = reflect(index + self._randint(-self.translate, self.translate + 1, n), size)
        if flips is not None:
            index = torch.where(flips(), index.flip(1), index)
        return index

    def photometric(self, x: Tensor) -> Tensor:
        """Colour jitter (brightness, contrast, saturation factors per image in
        [1 - j, 1 + j]; saturation for 3 channels only), then gaussian noise;
        ``x``: float N×C×H×W pixels in [0, 1]."""
        if not self.train:
            return x
        if self.color_jitter:
            x = self._jitter(x)
        if self.noise:
            x = x + self.noise * torch.randn(x.shape, generator=self.generator, device=self.device, dtype=x.dtype)
        return x

    def _jitter(self, x: Tensor) -> Tensor:
        """Brightness b, contrast c and saturation s in one pass:
        ``x' = b·c·(s·x + (1 - s)·grey) + b·(1 - c)·mean(grey)``, the same as
        applying them one after the other (grey is linear and keeps constants),
        clamped to [0, 1] once at the end."""
        n, channels = x.shape[:2]
        factors = (1 + (self._rand(n, 3) * 2 - 1) * self.color_jitter).clamp_(min=0).view(n, 3, 1, 1, 1)
        brightness, contrast, saturation = factors.unbind(1)
        grey = _grey(x)
        base = brightness * (1 - contrast) * grey.mean(dim=(1, 2, 3), keepdim=True)
        scale = brightness * contrast
        if channels == 3:
            base = torch.addcmul(base, grey, scale * (1 - saturation))
            scale = scale * saturation
        return torch.addcmul(base, x, scale).clamp_(0, 1)

    def spatial(self, x: Tensor) -> Tensor:
        """Random rotation in [-rotation, rotation] degrees and zoom in
        [1 - scale, 1 + scale], one resampling for the batch; what comes into
        view from outside the image is zero."""
        grid = self.spatial_grid(len(x), x.shape[2], x.shape[3], x.dtype)
        return x if grid is None else resample(x, grid)

    def spatial_grid(self, n: int, height: int, width: int, dtype: torch.dtype) -> Tensor | None:
        """The resampling grid of ``spatial`` for ``n`` images of ``height`` ×
        ``width`` (its random draws); None when nothing rotates or zooms."""
        if not self.train or not (self.rotation or self.scale):
            return None
        angle = (self._rand(n) * 2 - 1) * math.radians(self.rotation)
        zoom = 1 + (self._rand(n) * 2 - 1) * self.scale
        cos, sin = torch.cos(angle) / zoom, torch.sin(angle) / zoom
        zero = torch.zeros_like(cos)
        # The rotation in pixels, written in affine_grid's [-1, 1] coordinates of each axis.
        theta = torch.stack([torch.stack([cos, -sin * height / width, zero], 1),
                             torch.stack([sin * width / height, cos, zero], 1)], 1).to(dtype)
        return F.affine_grid(theta, [n, 1, height, width], align_corners=False)

    def __call__(self, x: Tensor) -> Tensor:
        """All of it on a float N×C×H×W batch of [0, 1] pixels."""
        n, _, height, width = x.shape
        positions = self.positions(n, height, width)
        if positions is not None:
            x = take(x.permute(0, 2, 3, 1), None, positions).permute(0, 3, 1, 2)
        return self.spatial(self.photometric(x))

    def state_dict(self) -> dict[str, Tensor]:
        return {"generator": self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        self.generator.set_state(state["generator"].cpu())

    def _rand(self, *shape: int) -> Tensor:
        return torch.rand(shape, generator=self.generator, device=self.device)

    def _randint(self, low: int, high: int, n: int) -> Tensor:
        return torch.randint(low, high, (n, 1), generator=self.generator, device=self.device)


def resample(x: Tensor, grid: Tensor) -> Tensor:
    """Float N×C×H×W pixels resampled bilinearly on ``grid`` (``spatial_grid``'s); zero outside the image."""
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def centre_crop(height: int, width: int, crop: int | None, device: torch.device | str) -> Positions | None:
    """The rows and columns of the centred ``crop``×``crop`` window (None without a crop)."""
    if crop is None or (crop, crop) == (height, width):
        return None
    if crop > min(height, width):
        raise ValueError(f"The crop size {crop} is larger than the images ({height}×{width}).")
    window = torch.arange(crop, device=device)[None]
    return window + (height - crop) // 2, window + (width - crop) // 2


def reflect(index: Tensor, size: int) -> Tensor:
    """Indices folded back into [0, size) by mirroring at the edges without
    repeating them (``F.pad``'s "reflect"), for any distance outside."""
    if size == 1:
        return torch.zeros_like(index)
    period = 2 * (size - 1)
    index = index.remainder(period)
    return torch.where(index >= size, period - index, index)


def take(images: Tensor, index: Tensor | None, positions: Positions | None) -> Tensor:
    """``images[index]`` (N×H×W×C, any dtype; all of them when ``index`` is
    None) at ``positions``: one gather giving N×h×w×C."""
    if positions is None:
        # index_select of whole rows: much faster than of N×H×W×C slices on the CPU
        return images if index is None else images.reshape(len(images), -1).index_select(0, index).view(-1, *images.shape[1:])
    rows, cols = positions
    count, height, width, channels = images.shape
    if index is None:
        index = torch.arange(count, device=images.device)
    flat = (index[:, None, None] * height + rows[:, :, None]) * width + cols[:, None, :]
    return images.reshape(-1, channels).index_select(0, flat.view(-1)).view(*flat.shape, channels)


def _grey(x: Tensor) -> Tensor:
    """Luma of N×C×H×W pixels as N×1×H×W (the image itself for one channel)."""
    if x.shape[1] != 3:
        return x.mean(dim=1, keepdim=True)
    return (x[:, 0:1] * GREY[0] + x[:, 1:2] * GREY[1] + x[:, 2:3] * GREY[2])
