"""Object detection: boxes with a class each (``trainer.detection.targets``),
read from KITTI, Pascal VOC, COCO or YOLO labels (``detection_plan``),
scored by mean average precision over the classes, at an IoU of 0.5 (the
headline) and averaged over IoUs from 0.5 to 0.95 (COCO's), and by the
precision and recall of the detections scored at least ``SCORE_THRESHOLD``.

Its datasets can be built, explored and exported as COCO. Its trainer side
(``detection_training``) trains torchvision's detectors on them, with their
own losses (charted one by one), flips that move the boxes, and mAP. Its
models detect objects in one image (Detect) and can be exported
(``detection_export``: ONNX, one image in, boxes, scores and labels out).

Its models are torchvision's detectors (``catalog.DETECTION_NETWORKS``),
trained from scratch. Its runs take the options that do not move pixels
(solver, schedule, precision, devices…) and, of the augmentation, horizontal
flips alone: the others would move the pixels without the boxes (crops,
translation, rotation, zoom) or are classification's (test-time
augmentation averages logits; label smoothing). They are not compiled
(``COMPILE``).


Its models can be evaluated on a split of their dataset, or on new images
in a server folder or an uploaded archive labelled in any of its import
formats (``detection_files``), with a report of its own
(``detection_report``: mAP, per-class AP and precision–recall curves, and
at the score threshold the user chooses, precision, recall, false
positives, missed boxes, images worst first).
"""

from trainer.catalog import DETECTION_NETWORKS
from trainer.detection.targets import Boxes

from . import uses
from .base import EVALUATION_OPTIONS, Metric, Task

AUGMENTATION = "its only augmentation is a horizontal flip, which moves the boxes with the pixels"
# Measured: a 3-step CPU run of Faster R-CNN MobileNetV3-FPN at 32 pixels had
# not finished compiling after 10 minutes; graph breaks in its transform and
# proposals whose count changes every batch make it recompile.
COMPILE = ("torch.compile recompiles a detector at every batch (its proposals change in number), which costs "
           "far more than it saves")

# The score a detection needs for the precision and recall charted while a
# model trains and in an evaluation, unless its user chooses another (the
# run's ``score_threshold``, the evaluation's; the Detect page's slider
# chooses its own).
SCORE_THRESHOLD: float = EVALUATION_OPTIONS["score_threshold"]

TASK = Task("detection", "Object detection", metrics=(
    Metric("map50", "mAP@0.5"),
    Metric("map", "mAP@0.5:0.95"),
    Metric("precision", "precision at the score threshold"),
    Metric("recall", "recall at the score threshold"),
), metrics_title="mean average precision", targets=Boxes(), training="trainer.tasks.detection_training",
    plan="trainer.tasks.detection_plan", export="trainer.tasks.detection_export",
    model_uses=frozenset({uses.DETECT, uses.EVALUATE, uses.EXPORT}),
    networks=DETECTION_NETWORKS, network_sources=("standard",),
    refused_options={**dict.fromkeys(("flip", "crop", "translate", "rotation", "scale", "noise", "color_jitter", "tta",
                                      "label_smoothing"), AUGMENTATION), "compile": COMPILE},
    flips=("none", "horizontal"),
    # A detector's validation loss (its training losses on the split) is a
    # poor guide to its detections: on 600 photos it was lowest at epoch 1,
    # when its mAP@0.5 was 0, and rose while the mAP climbed to 0.2.
    best_by="val_map50",
    # Its evaluation report is its own (boxes scored by mAP,
    # ``detection_report``), of a split of the model's dataset or of new
    # images with their boxes (``detection_files``): a text list gives none.
    evaluation_sources=("split", "folder", "archive"),
    labelled_files="images with their boxes in KITTI, Pascal VOC, COCO JSON or YOLO layout, as a detection dataset "
                   "is imported",
    evaluation_options=("score_threshold", "label_format"),
    files_action="Detect many",
    run_options=("score_threshold",),
    # The parts torchvision's detectors give their losses: Faster R-CNN's
    # first four, RetinaNet's, FCOS's and SSD's the others.
    loss_components={
        "loss_classifier": "classification (box head)",
        "loss_box_reg": "box regression (box head)",
        "loss_objectness": "objectness (proposals)",
        "loss_rpn_box_reg": "box regression (proposals)",
        "classification": "classification",
        "bbox_regression": "box regression",
        "bbox_ctrness": "centre-ness",
    })
