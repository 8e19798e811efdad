"""Classification: one class per image, scored by top-1 and top-5 accuracy."""

from trainer import eventkinds as kinds

from .base import Task

TASK = Task("classification", "Classification", metric_series={
    "val_top1": (kinds.VAL, "top1"),
    "val_top5": (kinds.VAL, "top5"),
})
