"""Classification: one class per image, scored by top-1 and top-5 accuracy.
Its models can classify an image, be evaluated, be exported and start new
models from their weights."""

from trainer.catalog import NETWORKS
from trainer.targets import ClassLabels

from . import uses
from .base import Metric, Task

TASK = Task("classification", "Classification", metrics=(
    Metric("top1", "top-1"),
    Metric("top5", "top-5", above_classes=5),
), metrics_title="accuracy", targets=ClassLabels(), training="trainer.tasks.classification_training",
    plan="trainer.tasks.classification_plan", networks=NETWORKS, export="trainer.tasks.classification_export",
    model_uses=frozenset({uses.CLASSIFY, uses.EVALUATE, uses.EXPORT, uses.PRETRAINED}))
