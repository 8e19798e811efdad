"""Semantic segmentation: a class for every pixel (``trainer.segmentation``),
read from label images beside the images (palette indices, gray levels, or
colours with a colour map; Pascal VOC's layout), with an ignore value
excluded from loss and metrics, scored by the mean intersection over union
of the classes (the headline), pixel accuracy and the Dice coefficient.

Its datasets can be built and explored (masks over the images, the share of
pixels and the images per class); no network trains on them yet
(``training`` None), so the New model page does not list them.
"""

from trainer.segmentation.targets import Masks

from .base import Metric, Task

TASK = Task("segmentation", "Semantic segmentation", metrics=(
    Metric("miou", "mIoU"),
    Metric("pixel_accuracy", "pixel accuracy"),
    Metric("dice", "Dice"),
), metrics_title="intersection over union", targets=Masks(), training=None,
    plan="trainer.tasks.segmentation_plan")
