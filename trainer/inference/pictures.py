"""Pictures of what a network does, as PNG bytes: channels or filters tiled
in a grid (each scaled to its own range), and a heat map over an image."""

from __future__ import annotations

import io
import math

import numpy as np
import torch
from PIL import Image

MAX_TILES = 64
MIN_TILE_PIXELS = 24  # small maps and filters are enlarged (by whole pixels) to about this size
HEAT_OPACITY = 0.5


def png(pixels: np.ndarray) -> bytes:
    """uint8 H×W×C (C 1 or 3) as PNG bytes."""
    out = io.BytesIO()
    Image.fromarray(pixels[:, :, 0] if pixels.shape[2] == 1 else pixels).save(out, format="PNG")
    return out.getvalue()


def _scaled(maps: torch.Tensor) -> torch.Tensor:
    """N×C×h×w floats to uint8, each of the N scaled to its own range."""
    low = maps.amin(dim=(1, 2, 3), keepdim=True)
    high = maps.amax(dim=(1, 2, 3), keepdim=True)
    return ((maps - low) / (high - low).clamp_min(1e-12) * 255).round().to(torch.uint8)


def grid(maps: torch.Tensor) -> bytes:
    """Up to ``MAX_TILES`` maps (N×h×w grey, or N×3×h×w colour) in a grid
    with one-pixel white lines between them, as a PNG."""
    maps = maps.detach().float().cpu()[:MAX_TILES]
    if maps.dim() == 3:
        maps = maps[:, None]
    tiles = _scaled(torch.nan_to_num(maps))
    count, channels, height, width = tiles.shape
    zoom = max(1, MIN_TILE_PIXELS // max(height, width))
    tiles = tiles.repeat_interleave(zoom, dim=2).repeat_interleave(zoom, dim=3)
    height, width = height * zoom, width * zoom
    columns = math.ceil(math.sqrt(count))
    rows = math.ceil(count / columns)
    canvas = torch.full((rows * (height + 1) + 1, columns * (width + 1) + 1, channels), 255, dtype=torch.uint8)
    for i in range(count):
        r, c = divmod(i, columns)
        top, left = 1 + r * (height + 1), 1 + c * (width + 1)
        canvas[top:top + height, left:left + width] = tiles[i].permute(1, 2, 0)
    return png(canvas.numpy())


def activations(output: torch.Tensor) -> bytes:
    """One image's layer output (C×h×w channels, or a vector of features
    laid out as a square) as a tiled PNG."""
    if output.dim() == 3:
        return grid(output)
    values = output.detach().float().flatten().cpu()
    side = math.ceil(math.sqrt(values.numel()))
    square = torch.full((side * side,), float(values.min()) if values.numel() else 0.0)
    square[:values.numel()] = values
    return grid(square.view(1, side, side))


def filters(weight: torch.Tensor) -> bytes:
    """A convolution's filters (out×in×kh×kw) as a tiled PNG: in colour when
    they read three channels, else their first input channel."""
    weight = weight.detach()
    return grid(weight if weight.shape[1] == 3 else weight[:, 0])


def heat_colours(heat: np.ndarray) -> np.ndarray:
    """Values in [0, 1] to RGB (blue, cyan, yellow, red: a jet-like map), uint8 H×W×3."""
    red = np.clip(1.5 - np.abs(4 * heat - 3), 0, 1)
    green = np.clip(1.5 - np.abs(4 * heat - 2), 0, 1)
    blue = np.clip(1.5 - np.abs(4 * heat - 1), 0, 1)
    return (np.stack([red, green, blue], axis=-1) * 255).round().astype(np.uint8)


def overlay(image: np.ndarray, heat: np.ndarray) -> bytes:
    """``heat`` (h×w in [0, 1]) over ``image`` (uint8 h×w×C) as a PNG."""
    base = np.repeat(image, 3, axis=2) if image.shape[2] == 1 else image
    mixed = (1 - HEAT_OPACITY) * base.astype(np.float32) + HEAT_OPACITY * heat_colours(heat).astype(np.float32)
    return png(np.clip(mixed.round(), 0, 255).astype(np.uint8))
