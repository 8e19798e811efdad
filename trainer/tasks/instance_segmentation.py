"""Instance segmentation: each object's own mask and class
(``trainer.instances``), read from COCO JSON annotations (polygons and RLEs,
crowd regions kept as regions that count neither way) or Pascal VOC's
``SegmentationObject`` label images (``instance_plan``), scored by the mean
average precision of the masks at an IoU of 0.5 (the headline) and averaged
over IoUs from 0.5 to 0.95 (COCO's), and of the boxes round them at 0.5.

Its datasets can be built and explored (each object's mask over the image,
the objects and pixels per class, objects per image and their sizes). Its
trainer side (``instance_training``) trains Mask R-CNN on them with its own
losses (charted one by one) and every augmentation that moves pixels: the
objects move with them. Its models find the objects of one image (Detect
one: each object's box, score and outlined mask, filtered by the score
slider) and are evaluated on a split of their dataset with detection's
report, the detections matched to the objects by their masks and the mAP
the masks' (``instance_training.split_report``), also on new images with
their objects (``instance_files``), and exported
(``instance_export``: ONNX giving each object's mask, and a script that
takes them back to a photo as Detect one does).

Not compiled (``COMPILE``).
"""

from trainer.catalog import INSTANCE_NETWORKS
from trainer.instances.targets import Instances

from . import uses
from .base import Metric, Task
from .detection import COMPILE

CLASSIFICATION_ONLY = "it is an option of classification's"

TASK = Task("instance_segmentation", "Instance segmentation", metrics=(
    Metric("mask_map50", "mask mAP@0.5"),
    Metric("mask_map", "mask mAP@0.5:0.95"),
    Metric("box_map50", "box mAP@0.5"),
), metrics_title="mean average precision", targets=Instances(), training="trainer.tasks.instance_training",
    plan="trainer.tasks.instance_plan", export="trainer.tasks.instance_export",
    model_uses=frozenset({uses.DETECT, uses.EVALUATE, uses.EXPORT}),
    # Its report is detection's, its detections matched to the objects by
    # their masks (``instance_training.split_report``), of a split of the
    # model's dataset or of new images with their objects (``instance_files``).
    evaluation_sources=("split", "folder", "archive"), evaluation_options=("score_threshold",),
    labelled_files="images with their objects as COCO JSON annotations (categories matched to the model's classes "
                   "by name) or in Pascal VOC's layout (SegmentationObject and SegmentationClass, for a model of "
                   "VOC's classes)",
    files_action="Segment many",
    networks=INSTANCE_NETWORKS, network_sources=("standard",),
    refused_options={"tta": CLASSIFICATION_ONLY, "label_smoothing": CLASSIFICATION_ONLY, "compile": COMPILE},
    # As a detector's, its validation loss is a poor guide to its masks.
    best_by="val_mask_map50",
    loss_components={
        "loss_classifier": "classification (box head)",
        "loss_box_reg": "box regression (box head)",
        "loss_mask": "masks (mask head)",
        "loss_objectness": "objectness (proposals)",
        "loss_rpn_box_reg": "box regression (proposals)",
    })
