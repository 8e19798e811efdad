"""What the trainer offers, readable without importing torch: the standard
networks' descriptions and the solvers' names. The web app builds its forms
from these (its processes never load torch); the trainer builds networks and
optimizers under the same names."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NetworkInfo:
    name: str
    label: str
    paper_url: str
    input_size: tuple[int, int]  # height, width it was designed for
    summary: str
    # A detector's or a segmenter's: the classifier network (a name in
    # ``NETWORKS``) whose trained weights its backbone can start from; None: none can.
    backbone: str | None = None


IMAGENET = (224, 224)
RESNET = "https://arxiv.org/abs/1512.03385"

NETWORKS: dict[str, NetworkInfo] = {info.name: info for info in (
    NetworkInfo("lenet", "LeNet", "http://yann.lecun.com/exdb/publis/pdf/lecun-98.pdf", (28, 28),
                "DIGITS' LeNet for 28×28 digits: two 5×5 convolutions with max-pooling, 500 hidden units."),
    NetworkInfo("alexnet", "AlexNet", "https://papers.nips.cc/paper/4824", IMAGENET,
                "Five convolutions and three dense layers (61M parameters); the 2012 ImageNet winner."),
    NetworkInfo("googlenet", "GoogLeNet", "https://arxiv.org/abs/1409.4842", IMAGENET,
                "Inception v1: 22 layers of parallel 1×1/3×3/5×5 branches, 6M parameters."),
    NetworkInfo("vgg16", "VGG-16", "https://arxiv.org/abs/1409.1556", IMAGENET,
                "Thirteen 3×3 convolutions and three dense layers (138M parameters): simple and heavy."),
    NetworkInfo("resnet18", "ResNet-18", RESNET, IMAGENET, "Residual network with 18 layers of basic blocks, 11M parameters."),
    NetworkInfo("resnet34", "ResNet-34", RESNET, IMAGENET, "Residual network with 34 layers of basic blocks, 21M parameters."),
    NetworkInfo("resnet50", "ResNet-50", RESNET, IMAGENET,
                "Residual network with 50 layers of bottleneck blocks, 25M parameters."),
    NetworkInfo("mobilenet_v3", "MobileNetV3-Large", "https://arxiv.org/abs/1905.02244", IMAGENET,
                "Inverted residual blocks with squeeze-excitation for phones, 5M parameters."),
    NetworkInfo("efficientnet_b0", "EfficientNet-B0", "https://arxiv.org/abs/1905.11946", IMAGENET,
                "Compound-scaled MBConv network, 5M parameters."),
    NetworkInfo("vit_small", "ViT (small)", "https://arxiv.org/abs/2010.11929", IMAGENET,
                "Vision Transformer of 6 layers, 6 heads, width 384 on image patches (11M parameters)."),
    NetworkInfo("fastnet", "airbench (fast CIFAR-10)", "https://arxiv.org/abs/2404.00498", (32, 32),
                "Keller Jordan's airbench94: a whitened 2×2 stem and three conv groups; 94% on CIFAR-10 in seconds "
                "on a GPU."),
)}

DETECTION = (800, 800)  # what torchvision's detectors resize to; here, they keep the dataset's size

# Object detection's networks, trained from scratch (``trainer.tasks.detection_training``).
DETECTION_NETWORKS: dict[str, NetworkInfo] = {info.name: info for info in (
    NetworkInfo("fasterrcnn_mobilenet_v3_large_fpn", "Faster R-CNN MobileNetV3-Large FPN",
                "https://arxiv.org/abs/1506.01497", DETECTION,
                "Two-stage detector (proposals, then their classes and boxes) on a light backbone, 19M parameters.",
                backbone="mobilenet_v3"),
    NetworkInfo("fasterrcnn_resnet50_fpn", "Faster R-CNN ResNet-50 FPN", "https://arxiv.org/abs/1506.01497", DETECTION,
                "Two-stage detector on ResNet-50 with a feature pyramid, 41M parameters.", backbone="resnet50"),
    NetworkInfo("retinanet_resnet50_fpn", "RetinaNet ResNet-50 FPN", "https://arxiv.org/abs/1708.02002", DETECTION,
                "One-stage detector with anchors and the focal loss, on ResNet-50 with a feature pyramid, 34M "
                "parameters.", backbone="resnet50"),
    NetworkInfo("fcos_resnet50_fpn", "FCOS ResNet-50 FPN", "https://arxiv.org/abs/1904.01355", DETECTION,
                "One-stage detector without anchors (a box from each feature-map point), 32M parameters.",
                backbone="resnet50"),
    NetworkInfo("ssdlite320_mobilenet_v3_large", "SSDlite MobileNetV3-Large", "https://arxiv.org/abs/1905.02244",
                (320, 320), "Single-shot detector for phones; images resized to 320×320, 3M parameters."),
    NetworkInfo("ssd300_vgg16", "SSD300 VGG-16", "https://arxiv.org/abs/1512.02325", (300, 300),
                "The original single-shot detector; images resized to 300×300, 36M parameters."),
)}

SEGMENTATION = (520, 520)  # the crops torchvision trained its segmentation models on

# Semantic segmentation's networks, trained from scratch, torchvision's with
# their backbone from a pretrained classifier if chosen (``trainer.tasks.segmentation_training``).
SEGMENTATION_NETWORKS: dict[str, NetworkInfo] = {info.name: info for info in (
    NetworkInfo("unet", "U-Net (small)", "https://arxiv.org/abs/1505.04597", (256, 256),
                "An encoder of three poolings and a decoder with skip connections, 16 to 128 channels (0.5M "
                "parameters): for small datasets and medical images, any number of channels."),
    NetworkInfo("lraspp_mobilenet_v3_large", "LR-ASPP MobileNetV3-Large", "https://arxiv.org/abs/1905.02244",
                SEGMENTATION, "A light segmentation head on MobileNetV3-Large, 3M parameters.", backbone="mobilenet_v3"),
    NetworkInfo("deeplabv3_mobilenet_v3_large", "DeepLabV3 MobileNetV3-Large", "https://arxiv.org/abs/1706.05587",
                SEGMENTATION, "Atrous spatial pyramid pooling on MobileNetV3-Large, 11M parameters.",
                backbone="mobilenet_v3"),
    NetworkInfo("deeplabv3_resnet50", "DeepLabV3 ResNet-50", "https://arxiv.org/abs/1706.05587", SEGMENTATION,
                "Atrous spatial pyramid pooling on a dilated ResNet-50 (output stride 8), 39M parameters.",
                backbone="resnet50"),
    NetworkInfo("fcn_resnet50", "FCN ResNet-50", "https://arxiv.org/abs/1411.4038", SEGMENTATION,
                "DIGITS' fully convolutional network, on a dilated ResNet-50, 33M parameters.", backbone="resnet50"),
)}

MASK_RCNN = "https://arxiv.org/abs/1703.06870"

# Instance segmentation's networks: Mask R-CNN, trained from scratch or with
# its backbone from a pretrained classifier (``trainer.tasks.instance_training``).
INSTANCE_NETWORKS: dict[str, NetworkInfo] = {info.name: info for info in (
    NetworkInfo("maskrcnn_mobilenet_v3_large_fpn", "Mask R-CNN MobileNetV3-Large FPN", MASK_RCNN, DETECTION,
                "Faster R-CNN's proposals and boxes with a mask head a box, on a light backbone, 22M parameters.",
                backbone="mobilenet_v3"),
    NetworkInfo("maskrcnn_resnet50_fpn", "Mask R-CNN ResNet-50 FPN", MASK_RCNN, DETECTION,
                "The original Mask R-CNN on ResNet-50 with a feature pyramid, 44M parameters.", backbone="resnet50"),
    NetworkInfo("maskrcnn_resnet50_fpn_v2", "Mask R-CNN ResNet-50 FPN v2", "https://arxiv.org/abs/2111.11429",
                DETECTION, "Mask R-CNN with the improved recipe's heads (normalised convolutions), 46M parameters.",
                backbone="resnet50"),
)}

SOLVERS: list[tuple[str, str]] = [
    ("sgd", "SGD"),
    ("momentum", "SGD with momentum"),
    ("nesterov", "Nesterov accelerated gradient"),
    ("adam", "Adam"),
    ("adamw", "AdamW (decoupled weight decay)"),
    ("rmsprop", "RMSprop"),
    ("adagrad", "AdaGrad"),
    ("adadelta", "AdaDelta"),
    ("lars", "LARS (layer-wise adaptive rate scaling)"),
    ("lamb", "LAMB (layer-wise adaptive moments)"),
]
"""(name, label), in the form's order."""

_WITH_MOMENTUM = {"momentum", "nesterov", "rmsprop", "lars"}


def uses_momentum(name: str) -> bool:
    """Whether the solver reads the momentum setting (the form hides it otherwise)."""
    return name in _WITH_MOMENTUM
