"""The standard networks, each adapted to the data's channels, classes and image size.

torchvision models are built with ``weights=None`` (nothing is downloaded)
and ``num_classes``; their first convolution is remade for the data's
channels. Images under 64 pixels on a side (MNIST, CIFAR) keep their
resolution through the stem (first convolution at stride 1, no stem
max-pool) as the CIFAR versions of these networks do; only strides change,
so parameter shapes do not depend on the image size (except the ViT's
positional embedding). Images too small for a network even then are
upsampled to its minimum size by an ``nn.Upsample`` at its start.

The Python builders here are also the code that ``customize`` gives users to
edit: they use only ``torch``, ``nn``, ``F``, ``torchvision`` and each other,
the names a network's code gets (see ``code.py``). LeNet, AlexNet and VGG-16
are customised as layer lists instead (LeNet is built from its list).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from trainer.catalog import NETWORKS
from trainer.networks.layers import build_layers
from trainer.networks.layerspec import NetworkError, validate_layers

Builder = Callable[[int, int, int, int], nn.Module]


class _ImportedOnUse:
    """A module imported when one of its names is first read. torchvision
    costs about as much CPU time to import as torch itself, and LeNet and
    FastNet never use it: a short LeNet job spent a fifth of its CPU time
    importing it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


torchvision = _ImportedOnUse("torchvision")


def _upsampled(model: nn.Module, height: int, width: int, minimum: int) -> nn.Module:
    """``model`` behind an upsampling to ``minimum`` pixels a side when the images are smaller."""
    if min(height, width) >= minimum:
        return model
    size = (max(height, minimum), max(width, minimum))
    return nn.Sequential(nn.Upsample(size=size, mode="bilinear", align_corners=False), model)


LENET_LAYERS = """\
# LeNet as in DIGITS (LeCun et al. 1998), for 28×28 digits.
- conv: {out: 20, kernel: 5}
- maxpool: {kernel: 2, stride: 2}
- conv: {out: 50, kernel: 5}
- maxpool: {kernel: 2, stride: 2}
- flatten: {}
- linear: {out: 500}
- relu: {}
- linear: {out: classes}
"""

ALEXNET_LAYERS = """\
# AlexNet (Krizhevsky et al. 2012) as torchvision builds it, for 224×224 images
# (at least 63×63 with the first convolution's stride 4).
- conv: {out: 64, kernel: 11, stride: 4, padding: 2}
- relu: {}
- maxpool: {kernel: 3, stride: 2}
- conv: {out: 192, kernel: 5, padding: 2}
- relu: {}
- maxpool: {kernel: 3, stride: 2}
- conv: {out: 384, kernel: 3, padding: 1}
- relu: {}
- conv: {out: 256, kernel: 3, padding: 1}
- relu: {}
- conv: {out: 256, kernel: 3, padding: 1}
- relu: {}
- maxpool: {kernel: 3, stride: 2}
- adaptiveavgpool: {size: 6}
- flatten: {}
- dropout: {p: 0.5}
- linear: {out: 4096}
- relu: {}
- dropout: {p: 0.5}
- linear: {out: 4096}
- relu: {}
- linear: {out: classes}
"""


def _vgg16_layers() -> str:
    lines = ["# VGG-16 (Simonyan & Zisserman 2014) as torchvision builds it, for 224×224 images (at least 32×32)."]
    for block, (width, convs) in enumerate(((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)), 1):
        lines.append(f"# block {block}")
        lines += [f"- conv: {{out: {width}, kernel: 3, padding: 1}}", "- relu: {}"] * convs
        lines.append("- maxpool: {kernel: 2, stride: 2}")
    lines += ["- adaptiveavgpool: {size: 7}", "- flatten: {}"]
    lines += ["- linear: {out: 4096}", "- relu: {}", "- dropout: {p: 0.5}"] * 2
    lines.append("- linear: {out: classes}")
    return "\n".join(lines) + "\n"


VGG16_LAYERS = _vgg16_layers()


def lenet(channels: int, classes: int, height: int, width: int) -> nn.Module:
    model = build_layers(validate_layers(LENET_LAYERS), channels, classes, max(height, 16), max(width, 16))
    return _upsampled(model, height, width, 16)


def alexnet(channels: int, classes: int, height: int, width: int) -> nn.Module:
    """AlexNet as torchvision builds it (one tower, no LRN). Images under 64 pixels
    a side get the first convolution at stride 1 instead of 4."""
    model = torchvision.models.alexnet(weights=None, num_classes=classes)
    small = min(height, width) < 64
    model.features[0] = nn.Conv2d(channels, 64, kernel_size=11, stride=1 if small else 4, padding=2)
    return _upsampled(model, height, width, 21)


def vgg16(channels: int, classes: int, height: int, width: int) -> nn.Module:
    """VGG-16 as torchvision builds it. Images under 32 pixels a side skip the
    last max-pool (five would shrink them to nothing)."""
    model = torchvision.models.vgg16(weights=None, num_classes=classes)
    model.features[0] = nn.Conv2d(channels, 64, kernel_size=3, padding=1)
    nn.init.kaiming_normal_(model.features[0].weight, mode="fan_out", nonlinearity="relu")
    nn.init.zeros_(model.features[0].bias)
    if min(height, width) < 32:
        model.features[30] = nn.Identity()
    return _upsampled(model, height, width, 16)


def googlenet(channels: int, classes: int, height: int, width: int) -> nn.Module:
    """GoogLeNet (Inception v1) as torchvision builds it, without the auxiliary
    classifiers. Images under 64 pixels a side keep their resolution through
    the stem: first convolution at stride 1, no first max-pool."""
    model = torchvision.models.googlenet(weights=None, num_classes=classes, aux_logits=False, init_weights=True)
    small = min(height, width) < 64
    model.conv1.conv = nn.Conv2d(channels, 64, kernel_size=7, stride=1 if small else 2, padding=3, bias=False)
    nn.init.trunc_normal_(model.conv1.conv.weight, mean=0.0, std=0.01, a=-2, b=2)
    if small:
        model.maxpool1 = nn.Identity()
    return _upsampled(model, height, width, 4)


def _resnet(model: nn.Module, channels: int, height: int, width: int) -> nn.Module:
    """Adapt a torchvision ResNet: the first convolution takes the data's channels;
    images under 64 pixels a side keep their resolution through the stem (first
    convolution at stride 1, no max-pool), as the ResNets for CIFAR do."""
    small = min(height, width) < 64
    model.conv1 = nn.Conv2d(channels, 64, kernel_size=7, stride=1 if small else 2, padding=3, bias=False)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
    if small:
        model.maxpool = nn.Identity()
    return model


def resnet18(channels: int, classes: int, height: int, width: int) -> nn.Module:
    return _resnet(torchvision.models.resnet18(weights=None, num_classes=classes), channels, height, width)


def resnet34(channels: int, classes: int, height: int, width: int) -> nn.Module:
    return _resnet(torchvision.models.resnet34(weights=None, num_classes=classes), channels, height, width)


def resnet50(channels: int, classes: int, height: int, width: int) -> nn.Module:
    return _resnet(torchvision.models.resnet50(weights=None, num_classes=classes), channels, height, width)


def _first_conv(model: nn.Module, channels: int, height: int, width: int) -> nn.Module:
    """Remake the stride-2 3×3 stem convolution of a torchvision MobileNet or
    EfficientNet for the data's channels; stride 1 for images under 64 pixels a side."""
    old = model.features[0][0]
    stride = 1 if min(height, width) < 64 else 2
    model.features[0][0] = nn.Conv2d(channels, old.out_channels, kernel_size=3, stride=stride, padding=1, bias=False)
    nn.init.kaiming_normal_(model.features[0][0].weight, mode="fan_out")
    return model


def mobilenet_v3(channels: int, classes: int, height: int, width: int) -> nn.Module:
    return _first_conv(torchvision.models.mobilenet_v3_large(weights=None, num_classes=classes), channels, height, width)


def efficientnet_b0(channels: int, classes: int, height: int, width: int) -> nn.Module:
    return _first_conv(torchvision.models.efficientnet_b0(weights=None, num_classes=classes), channels, height, width)


def vit_small(channels: int, classes: int, height: int, width: int) -> nn.Module:
    """A small Vision Transformer: 6 layers of 6 heads, width 384. Patches are 4
    pixels for images under 64 pixels a side, 8 under 128, else 16; images are
    resized to a square whose side is a multiple of the patch when they are not one."""
    shortest = min(height, width)
    patch = 4 if shortest < 64 else 8 if shortest < 128 else 16
    side = -(-max(height, width) // patch) * patch
    model = torchvision.models.VisionTransformer(image_size=side, patch_size=patch, num_layers=6, num_heads=6,
                                                 hidden_dim=384, mlp_dim=1536, num_classes=classes)
    model.conv_proj = nn.Conv2d(channels, 384, kernel_size=patch, stride=patch)
    nn.init.trunc_normal_(model.conv_proj.weight, std=(1 / (channels * patch * patch)) ** 0.5)
    nn.init.zeros_(model.conv_proj.bias)
    if (height, width) != (side, side):
        return nn.Sequential(nn.Upsample(size=(side, side), mode="bilinear", align_corners=False), model)
    return model


class ConvGroup(nn.Module):
    """airbench's block: conv3×3 → max-pool 2 → BN → GELU → conv3×3 → BN → GELU.
    Convolutions without bias, initialised to pass their input through (Dirac)
    on as many filters as there are input channels; batch norms with the scale
    frozen at 1 and a fast running average (airbench's momentum 0.6 is
    PyTorch's 0.4)."""

    def __init__(self, channels_in: int, channels_out: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels_out, kernel_size=3, padding=1, bias=False)
        self.pool = nn.MaxPool2d(2)
        self.norm1 = nn.BatchNorm2d(channels_out, eps=1e-12, momentum=1 - 0.6)
        self.conv2 = nn.Conv2d(channels_out, channels_out, kernel_size=3, padding=1, bias=False)
        self.norm2 = nn.BatchNorm2d(channels_out, eps=1e-12, momentum=1 - 0.6)
        self.activ = nn.GELU()
        with torch.no_grad():
            for conv in (self.conv1, self.conv2):
                nn.init.dirac_(conv.weight[: conv.in_channels])
        for norm in (self.norm1, self.norm2):
            norm.weight.requires_grad = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.activ(self.norm1(self.pool(self.conv1(x))))
        return self.activ(self.norm2(self.conv2(x)))


class FastNet(nn.Module):
    """The cifar10-airbench network (Jordan 2024, airbench94): a frozen 2×2
    whitening convolution (2 × channels × 4 filters, no padding, trainable bias),
    three ConvGroups of widths 64, 256 and 256, a global max-pool and a linear
    head without bias whose output is scaled by 1/9.

    ``init_from_data(images)`` sets the whitening filters from the images' 2×2
    patch covariance (its eigenvectors scaled by 1/sqrt(eigenvalue), and their
    negatives); without it they keep their random initialisation. A training
    job passes it training images as the network sees them (normalised,
    mean subtracted). Images under 9 pixels a side are upsampled to 9.
    ``whitening_bias()`` is the parameter a job may train for its first
    epochs only (airbench: 3).
    """

    def __init__(self, channels: int, classes: int, height: int, width: int) -> None:
        super().__init__()
        small = min(height, width) < 9
        self.resize = nn.Upsample(size=(max(height, 9), max(width, 9)), mode="bilinear") if small else nn.Identity()
        self.whiten = nn.Conv2d(channels, 2 * channels * 2 * 2, kernel_size=2, padding=0, bias=True)
        self.whiten.weight.requires_grad = False
        self.activ = nn.GELU()
        self.groups = nn.Sequential(ConvGroup(self.whiten.out_channels, 64), ConvGroup(64, 256), ConvGroup(256, 256))
        self.pool = nn.AdaptiveMaxPool2d(1)
        self.head = nn.Linear(256, classes, bias=False)
        self.scale = 1 / 9

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.groups(self.activ(self.whiten(self.resize(x))))
        return self.head(self.pool(x).flatten(1)) * self.scale

    def whitening_bias(self) -> nn.Parameter:
        return self.whiten.bias

    @torch.no_grad()
    def init_from_data(self, images: torch.Tensor, eps: float = 5e-4) -> None:
        """Whitening filters from ``images`` (float N×C×H×W, normalised; a few
        thousand are plenty). The patch covariance is summed over chunks of
        about four million patches to bound memory. ``eps`` is relative to
        the patches' mean variance: airbench's images have unit variance, so
        its absolute 5e-4 is the same regularisation at any pixel scale."""
        images = self.resize(images.float())
        size = self.whiten.kernel_size
        dims = images.shape[1] * size[0] * size[1]
        covariance = torch.zeros(dims, dims, dtype=torch.float64, device=images.device)
        count = 0
        chunk = max(1, 2**22 // (images.shape[2] * images.shape[3]))
        for part in images.split(chunk):
            patches = part.unfold(2, size[0], 1).unfold(3, size[1], 1).transpose(1, 3).reshape(-1, dims)
            covariance += (patches.T @ patches).double()
            count += patches.shape[0]
        covariance /= max(count, 1)
        eigenvalues, eigenvectors = torch.linalg.eigh(covariance)
        eigenvalues, eigenvectors = eigenvalues.flip(0), eigenvectors.T.flip(0)
        eps = eps * max(float(covariance.trace()) / dims, 1e-8)  # blank images: no division by 0
        filters = (eigenvectors / torch.sqrt(eigenvalues.clamp(min=0) + eps)[:, None]).reshape(dims, -1, *size)
        weight = self.whiten.weight
        weight.copy_(torch.cat((filters, -filters)).to(device=weight.device, dtype=weight.dtype))


def fastnet(channels: int, classes: int, height: int, width: int) -> nn.Module:
    return FastNet(channels, classes, height, width)


@dataclass(frozen=True)
class StandardNetwork:
    name: str
    label: str
    paper_url: str
    input_size: tuple[int, int]
    summary: str
    build: Builder = field(repr=False)
    helpers: tuple[object, ...] = field(default=(), repr=False)
    backbone: str | None = None  # ``NetworkInfo``'s: a detector's (none of these)


# Each network's builder and the helpers its customised code needs besides it.
BUILDERS: dict[str, tuple[Builder, tuple[object, ...]]] = {
    "lenet": (lenet, ()),
    "alexnet": (alexnet, (_upsampled,)),
    "googlenet": (googlenet, (_upsampled,)),
    "vgg16": (vgg16, (_upsampled,)),
    "resnet18": (resnet18, (_resnet,)),
    "resnet34": (resnet34, (_resnet,)),
    "resnet50": (resnet50, (_resnet,)),
    "mobilenet_v3": (mobilenet_v3, (_first_conv,)),
    "efficientnet_b0": (efficientnet_b0, (_first_conv,)),
    "vit_small": (vit_small, ()),
    "fastnet": (fastnet, (ConvGroup, FastNet)),
}

STANDARD: dict[str, StandardNetwork] = {
    name: StandardNetwork(**asdict(info), build=BUILDERS[name][0], helpers=BUILDERS[name][1])
    for name, info in NETWORKS.items()
}

LAYER_LISTS = {"lenet": LENET_LAYERS, "alexnet": ALEXNET_LAYERS, "vgg16": VGG16_LAYERS}


def _python(network: StandardNetwork) -> str:
    header = (f'"""{network.label}, as digitslike builds it. Paper: {network.paper_url}\n\n'
              "build() gets the data's channels, classes and image size and returns an nn.Module;\n"
              'torch, nn (torch.nn), F (torch.nn.functional) and torchvision are already imported.\n"""\n')
    parts = [inspect.getsource(helper) for helper in network.helpers]
    parts.append(inspect.getsource(network.build).replace(f"def {network.name}(", "def build(", 1))
    return header + "\n\n" + "\n\n".join(parts)


def customize(name: str) -> dict[str, str]:
    """The editor text that rebuilds standard network ``name``: a layer list for
    LeNet, AlexNet and VGG-16, Python for the others."""
    if name not in STANDARD:
        raise NetworkError(f"Unknown standard network {name!r}; known: {', '.join(STANDARD)}")
    if name in LAYER_LISTS:
        return {"source": "layers", "text": LAYER_LISTS[name]}
    return {"source": "python", "text": _python(STANDARD[name])}
