"""How the weights are updated: batch accumulation, the solver and its
decays, label smoothing, BatchNorm biases' own rate and decay, an average of
the weights, and how long the fast network's whitening bias trains. The
learning rate and its policy are the schedule's (``schedule``)."""

from __future__ import annotations

from typing import Any

from django import forms

from .. import networkinfo
from .floatfield import float_field

AVERAGING = [("none", "Off"), ("ema", "Exponential moving average (EMA), kept beside the weights"),
             ("lookahead", "Lookahead: the weights are reset to their average as it moves (airbench)")]


class SolverFields(forms.Form):
    batch_accumulation = forms.IntegerField(min_value=1, max_value=1024, initial=1, label="Batch accumulation",
                                            help_text="Batches whose gradients are summed before each update.")

    solver = forms.ChoiceField(choices=[], initial="momentum", label="Solver",
                               help_text="SGD with momentum 0.9 is torchvision's reference default; "
                                         "DIGITS' default was plain SGD, which ignores the momentum.")
    momentum = float_field("Momentum", 0.9, maximum=0.999)
    weight_decay = float_field("Weight decay", 0.0001)
    label_smoothing = float_field("Label smoothing", 0.0, maximum=0.99)
    norm_bias_lr_scale = float_field("BatchNorm biases: learning rate (× the base rate)", None, required=False,
                                     maximum=10_000, help_text="Blank: the base rate, as every other parameter.")
    norm_bias_weight_decay = float_field("BatchNorm biases: weight decay", None, required=False,
                                         help_text="Blank: the weight decay above.")
    averaging = forms.ChoiceField(choices=AVERAGING, initial="none", label="Average of the weights",
                                  help_text="Validation, snapshots and the exported model use the average.")
    average_decay = float_field("Averaging decay (per step)", 0.95, maximum=0.9999,
                                help_text="Every N steps the average keeps decay^N × (progress)³ of itself.")
    average_every = forms.IntegerField(min_value=1, max_value=10_000, initial=5, label="Average every N steps")
    whiten_bias_epochs = forms.IntegerField(required=False, min_value=1, max_value=100_000,
                                            label="Train the whitening bias for the first N epochs only",
                                            help_text="The fast small-image network's first layer. Blank: every epoch.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["solver"].choices = [(s["name"], s["label"]) for s in networkinfo.solvers().values()]

    def averaging_params(self) -> dict[str, Any] | None:
        """The average of the weights as params store it: None when off."""
        data = self.cleaned_data
        if data["averaging"] == "none":
            return None
        return {"kind": data["averaging"], "decay": data["average_decay"], "every": data["average_every"]}
