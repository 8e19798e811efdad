"""Object detection: boxes with a class each (``trainer.detection.targets``),
scored by mean average precision over the classes, at an IoU of 0.5 (the
headline) and averaged over IoUs from 0.5 to 0.95 (COCO's).

Not yet among ``TASKS``: its trainer side (``Task.training``) is still to be
written, and a registered task is one a dataset can be built for and a model
trained on. Its models offer no use yet."""

from trainer.detection.targets import Boxes

from .base import Metric, Task

TASK = Task("detection", "Object detection", metrics=(
    Metric("map50", "mAP@0.5"),
    Metric("map", "mAP@0.5:0.95"),
), metrics_title="mean average precision", targets=Boxes(), training="trainer.tasks.detection_training")
