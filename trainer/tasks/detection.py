"""Object detection: boxes with a class each (``trainer.detection.targets``),
read from KITTI, Pascal VOC, COCO or YOLO labels (``detection_plan``),
scored by mean average precision over the classes, at an IoU of 0.5 (the
headline) and averaged over IoUs from 0.5 to 0.95 (COCO's).

Its datasets can be built, explored and exported as COCO. Its trainer side
(``detection_training``) trains torchvision's detectors on them, with their
own losses (charted one by one), flips that move the boxes, and mAP. Its
models can be exported (``detection_export``: ONNX, one image in, boxes,
scores and labels out)."""

from trainer.detection.targets import Boxes

from . import uses
from .base import Metric, Task

TASK = Task("detection", "Object detection", metrics=(
    Metric("map50", "mAP@0.5"),
    Metric("map", "mAP@0.5:0.95"),
), metrics_title="mean average precision", targets=Boxes(), training="trainer.tasks.detection_training",
    plan="trainer.tasks.detection_plan", export="trainer.tasks.detection_export",
    model_uses=frozenset({uses.EXPORT}))
