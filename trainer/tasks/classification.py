"""Classification: one class per image, scored by top-1 and top-5 accuracy."""

from trainer.targets import ClassLabels

from .base import Metric, Task

TASK = Task("classification", "Classification", metrics=(
    Metric("top1", "top-1"),
    Metric("top5", "top-5", above_classes=5),
), metrics_title="accuracy", targets=ClassLabels(),
    training="trainer.tasks.classification_training")
