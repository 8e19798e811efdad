"""A small U-Net (Ronneberger et al., 2015) for semantic segmentation of
small datasets and medical images, as DIGITS' medical example trained one:
an encoder of ``depth`` poolings, a decoder that upsamples with transposed
convolutions and joins the encoder's features of the same size, one logit
a class a pixel at the input's size. Any number of input channels, any
input size (padded to a multiple of ``2 ** depth`` and cropped back)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def _block(into: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(into, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True),
                         nn.Conv2d(out, out, 3, padding=1, bias=False), nn.BatchNorm2d(out), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, channels: int, classes: int, width: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.depth = depth
        widths = [width * 2**level for level in range(depth + 1)]
        self.down = nn.ModuleList([_block(channels, widths[0])] +
                                  [_block(widths[level - 1], widths[level]) for level in range(1, depth + 1)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(widths[level], widths[level - 1], 2, stride=2)
                                 for level in range(depth, 0, -1)])
        self.join = nn.ModuleList([_block(2 * widths[level - 1], widths[level - 1]) for level in range(depth, 0, -1)])
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, width = x.shape[-2:]
        step = 2**self.depth
        x = F.pad(x, (0, -width % step, 0, -height % step))
        skips = []
        for level, block in enumerate(self.down):
            x = block(x if level == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, join, skip in zip(self.up, self.join, reversed(skips[:-1]), strict=True):
            x = join(torch.cat([up(x), skip], dim=1))
        return self.head(x)[..., :height, :width]
