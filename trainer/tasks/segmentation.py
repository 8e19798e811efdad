"""Semantic segmentation: a class for every pixel (``trainer.segmentation``),
read from label images beside the images (palette indices, gray levels, or
colours with a colour map; Pascal VOC's layout), with an ignore value
excluded from loss and metrics, scored by the mean intersection over union
of the classes (the headline), pixel accuracy and the Dice coefficient.

Its datasets can be built and explored (masks over the images, the share of
pixels and the images per class). Its trainer side
(``segmentation_training``) trains torchvision's segmentation networks and
a small U-Net on them, with every augmentation: the masks move with the
pixels (crops, translations, flips, rotation and zoom). Its
models segment one image (Segment) and are evaluated on a split of their
dataset or on new images with their label images (``segmentation_files``),
with a report of their own (``segmentation_report``: mIoU, pixel accuracy,
Dice, per-class IoU, the pixel confusion matrix, the images worst first
with their masks), and exported (``segmentation_export``: ONNX and a
``torch.export`` program, the colour map, and a script that segments a
photo as Segment one does).
"""

from trainer.catalog import SEGMENTATION_NETWORKS
from trainer.segmentation.targets import Masks

from . import uses
from .base import Metric, Task

CLASSIFICATION_ONLY = "it is an option of classification's"

TASK = Task("segmentation", "Semantic segmentation", metrics=(
    Metric("miou", "mIoU"),
    Metric("pixel_accuracy", "pixel accuracy"),
    Metric("dice", "Dice"),
), metrics_title="intersection over union", targets=Masks(), training="trainer.tasks.segmentation_training",
    plan="trainer.tasks.segmentation_plan", export="trainer.tasks.segmentation_export",
    networks=SEGMENTATION_NETWORKS, network_sources=("standard",),
    refused_options={"tta": CLASSIFICATION_ONLY, "label_smoothing": CLASSIFICATION_ONLY},
    best_by="val_miou", run_options=("segmentation_loss",),
    model_uses=frozenset({uses.SEGMENT, uses.EVALUATE, uses.EXPORT}),
    # Each class's scores at the end of a run, on the page's result.
    class_metrics={"iou": "IoU", "dice": "Dice", "precision": "precision", "recall": "recall"},
    # Its report is its own, of a split of the model's dataset or of new
    # images with their label images (``segmentation_files``): a text list gives none.
    evaluation_sources=("split", "folder", "archive"),
    labelled_files="images with their label images, in a folder of images and one of label images (labels, masks or "
                   "annotations) with matching names or in Pascal VOC's layout, the label images coded as the model's "
                   "dataset's",
    files_action="Segment many")
