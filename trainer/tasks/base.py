"""What a task says about itself that the web side and the trainer share,
torch-free and Django-free: its name and label, and the chart series its
runs report (the event kind and field each is read from)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainer import eventkinds as kinds

# The series every training loop reports, whatever its task.
LOOP_SERIES: dict[str, tuple[str, str]] = {
    "train_loss": (kinds.TRAIN, "loss"),
    "val_loss": (kinds.VAL, "loss"),
    "lr": (kinds.TRAIN, "lr"),
    "images_per_s": (kinds.TRAIN, "images_per_s"),
    "data_wait": (kinds.TRAIN, "data_wait"),
}
# Kinds the training section of the job page follows live.
PAGE_KINDS = (kinds.NETWORK, kinds.TRAIN, kinds.PERF, kinds.HARDWARE, kinds.PROFILE, kinds.VAL, kinds.LAYERS,
              kinds.BEST, kinds.SNAPSHOT, kinds.RESUME, kinds.RESULT, kinds.STATUS)


@dataclass(frozen=True)
class Task:
    name: str
    label: str
    # Chart series of its own, beside the loop's: name -> (event kind, field of its data).
    metric_series: dict[str, tuple[str, str]]

    @property
    def series(self) -> dict[str, tuple[str, str]]:
        return {**LOOP_SERIES, **self.metric_series}

    def series_fields(self) -> dict[str, dict[str, str]]:
        """{event kind: {series name: field}} of the kinds that carry points."""
        fields: dict[str, dict[str, str]] = {}
        for name, (kind, key) in self.series.items():
            fields.setdefault(kind, {})[name] = key
        return fields

    def page_vocabulary(self) -> dict[str, Any]:
        """What a page script needs to follow a run of this task: the event
        kinds by name and the series each metric kind carries."""
        return {"kinds": {kind: kind for kind in PAGE_KINDS}, "series_fields": self.series_fields()}
