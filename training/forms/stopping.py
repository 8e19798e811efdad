"""Stopping before the last epoch when validation stops improving: on the
validation loss, or on the headline metric of any task (``trainer.tasks``),
which must then be the dataset's task's."""

from __future__ import annotations

from typing import Any

from django import forms

from trainer.tasks import TASKS, Task

EARLY_STOPPING = [("none", "Off"), ("val_loss", "When the validation loss stops falling"),
                  *dict.fromkeys((task.headline.series, f"When the validation {task.metrics_title} stops rising")
                                 for task in TASKS.values() if task.trains)]


class StoppingFields(forms.Form):
    early_stopping = forms.ChoiceField(choices=EARLY_STOPPING, initial="none", label="Early stopping")
    patience = forms.IntegerField(min_value=1, max_value=10_000, initial=5, label="Patience (validations)",
                                  help_text="Validations without a new best before training stops.")

    def check_early_stopping(self, data: dict[str, Any], task: Task) -> None:
        chosen = data.get("early_stopping")
        if chosen not in (None, "none", "val_loss", task.headline.series):
            self.add_error("early_stopping", f"A {task.label.lower()} dataset's validation does not report "
                                             f"{chosen}: stop on the validation loss or {task.headline.series}.")

    def early_stopping_params(self) -> dict[str, Any] | None:
        """Early stopping as params store it: None when off."""
        data = self.cleaned_data
        if data["early_stopping"] == "none":
            return None
        return {"metric": data["early_stopping"], "patience": data["patience"]}
