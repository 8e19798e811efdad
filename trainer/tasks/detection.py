"""Object detection: boxes with a class each (``trainer.detection.targets``),
read from KITTI, Pascal VOC, COCO or YOLO labels (``detection_plan``),
scored by mean average precision over the classes, at an IoU of 0.5 (the
headline) and averaged over IoUs from 0.5 to 0.95 (COCO's).

Its datasets can be built, explored and exported as COCO. Its trainer side
(``detection_training``: torchvision's detectors, their losses, flips that
move the boxes, mAP) is built and tested in the trainer; the registration
names it (``training``) once the New model page offers detectors (their
networks, and only the options they take), so until then no model trains on
its datasets. Its models offer no use yet."""

from trainer.detection.targets import Boxes

from .base import Metric, Task

TASK = Task("detection", "Object detection", metrics=(
    Metric("map50", "mAP@0.5"),
    Metric("map", "mAP@0.5:0.95"),
), metrics_title="mean average precision", targets=Boxes(), training=None,
    plan="trainer.tasks.detection_plan")
