"""Stopping before the last epoch when validation stops improving."""

from __future__ import annotations

from typing import Any

from django import forms

EARLY_STOPPING = [("none", "Off"), ("val_loss", "When the validation loss stops falling"),
                  ("val_top1", "When the validation accuracy stops rising")]


class StoppingFields(forms.Form):
    early_stopping = forms.ChoiceField(choices=EARLY_STOPPING, initial="none", label="Early stopping")
    patience = forms.IntegerField(min_value=1, max_value=10_000, initial=5, label="Patience (validations)",
                                  help_text="Validations without a new best before training stops.")

    def early_stopping_params(self) -> dict[str, Any] | None:
        """Early stopping as params store it: None when off."""
        data = self.cleaned_data
        if data["early_stopping"] == "none":
            return None
        return {"metric": data["early_stopping"], "patience": data["patience"]}
