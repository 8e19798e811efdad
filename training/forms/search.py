"""The New model form's adaptive search: instead of one run or a grid sweep,
a number of trials whose learning rate and weight decay are drawn
log-uniformly from a range and whose batch size, solver, network and
augmentation (flips, translation, rotation, zoom, colour jitter) are drawn
from choices, by a sampler, with a pruner stopping the weak ones at a rung
(``training.searches``). Every other field is the trials' own."""

from __future__ import annotations

from typing import Any

from django import forms

from trainer import catalog
from trainer.tasks import TASKS, Task

from .. import searchstudy
from ..searches import MAX_TRIALS
from .augmentation import FLIP_CHOICES
from .floatfield import float_field

METRICS = [("", "The task's headline metric (validation accuracy, mAP, mIoU…), highest"),
           ("val_loss", "Validation loss, lowest"),
           *dict.fromkeys((metric.series, f"Validation {metric.label}, highest")
                          for task in TASKS.values() if task.trains for metric in task.metrics)]
MAX_PARALLEL = 64
# The augmentation a search may draw from choices: {param: (field, what the
# values are, whole numbers or not, lowest, highest, an example)}, the
# ranges the augmentation's own fields take.
AUGMENTATION_CHOICES = {
    "translate": ("search_translates", "translations", True, 0, 1024, "0, 2, 4"),
    "rotation": ("search_rotations", "rotations", False, 0, 180, "0, 10, 20"),
    "scale": ("search_scales", "zooms", False, 0, 0.9, "0, 0.1, 0.2"),
    "color_jitter": ("search_color_jitters", "colour jitters", False, 0, 1, "0, 0.2, 0.4"),
}


def _numbers(text: str, what: str, whole: bool = True, low: float = 1, high: float = 65_536,
             example: str = "64, 128, 256") -> list[int] | list[float]:
    kind = int if whole else float
    try:
        values = [kind(part) for part in text.replace(",", " ").split()]
    except ValueError:
        numbers = "whole numbers" if whole else "numbers"
        raise forms.ValidationError(f"Give {what} as {numbers} separated by commas, e.g. {example}.") from None
    if any(not low <= value <= high for value in values):  # NaN fails this too
        raise forms.ValidationError(f"Each of the {what} is from {low:g} to {high:g}.")
    return list(dict.fromkeys(values))


class SearchFields(forms.Form):
    search = forms.BooleanField(required=False, label="Search adaptively instead",
                                help_text="Trials drawn from the ranges below; the weak ones stopped early.")
    search_lr_low = float_field("Learning rate from", None, required=False, maximum=10.0,
                                help_text="Drawn log-uniformly between the two.")
    search_lr_high = float_field("Learning rate to", None, required=False, maximum=10.0)
    search_weight_decay_low = float_field("Weight decay from", None, required=False,
                                          help_text="Blank: the weight decay above for every trial.")
    search_weight_decay_high = float_field("Weight decay to", None, required=False)
    search_batch_sizes = forms.CharField(required=False, label="Batch sizes to choose from",
                                         help_text="e.g. 64, 128, 256. Blank: the batch size above.")
    search_solvers = forms.MultipleChoiceField(choices=[], required=False, label="Solvers to choose from",
                                               help_text="None chosen: the solver above.")
    search_networks = forms.MultipleChoiceField(choices=[], required=False, label="Networks to choose from",
                                                help_text="Standard networks of the dataset's task. None chosen: "
                                                          "the network above.")
    search_flips = forms.MultipleChoiceField(choices=FLIP_CHOICES, required=False, label="Flips to choose from",
                                             help_text="None chosen: the flips above.")
    search_translates = forms.CharField(required=False, label="Translations to choose from (pixels)",
                                        help_text="e.g. 0, 2, 4. Blank: the translation above.")
    search_rotations = forms.CharField(required=False, label="Rotations to choose from (± degrees)",
                                       help_text="e.g. 0, 10, 20. Blank: the rotation above.")
    search_scales = forms.CharField(required=False, label="Zooms to choose from (± fraction)",
                                    help_text="e.g. 0, 0.1, 0.2. Blank: the zoom above.")
    search_color_jitters = forms.CharField(required=False, label="Colour jitters to choose from (± fraction)",
                                           help_text="e.g. 0, 0.2, 0.4. Blank: the colour jitter above.")
    search_sampler = forms.ChoiceField(choices=list(searchstudy.SAMPLERS.items()), initial="tpe", label="Sampler")
    search_pruner = forms.ChoiceField(choices=list(searchstudy.PRUNERS.items()), initial="asha",
                                      label="Stop weak trials early")
    search_trials = forms.IntegerField(min_value=1, max_value=MAX_TRIALS, initial=27, label="Trials")
    search_parallel = forms.IntegerField(min_value=1, max_value=MAX_PARALLEL, initial=3, label="Trials at once")
    search_metric = forms.ChoiceField(choices=METRICS, required=False, label="Optimise")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["search_solvers"].choices = catalog.SOLVERS
        self.fields["search_networks"].choices = list({name: (name, info.label) for task in TASKS.values()
                                                       for name, info in task.networks.items()}.values())

    def clean_search_batch_sizes(self) -> list[int]:
        return _numbers(self.cleaned_data.get("search_batch_sizes") or "", "batch sizes")

    def clean_search_translates(self) -> list[int]:
        return self._augmentation_choices("translate")

    def clean_search_rotations(self) -> list[float]:
        return self._augmentation_choices("rotation")

    def clean_search_scales(self) -> list[float]:
        return self._augmentation_choices("scale")

    def clean_search_color_jitters(self) -> list[float]:
        return self._augmentation_choices("color_jitter")

    def _augmentation_choices(self, name: str) -> list[int] | list[float]:
        field, what, whole, low, high, example = AUGMENTATION_CHOICES[name]
        return _numbers(self.cleaned_data.get(field) or "", what, whole, low, high, example)

    def _range(self, data: dict[str, Any], name: str, required: bool) -> list[float] | None:
        low, high = data.get(f"search_{name}_low"), data.get(f"search_{name}_high")
        if low is None and high is None and not required:
            return None
        if low is None or high is None or not 0 < low < high:
            self.add_error(f"search_{name}_low", "Give a range above 0, its start below its end (a log-uniform draw).")
            return None
        return [low, high]

    def check_search(self, data: dict[str, Any], task: Task) -> None:
        """The search's fields, when asked for one, against the dataset's task."""
        if not data.get("search"):
            return
        self.search_space = {"lr": self._range(data, "lr", required=True),
                             "weight_decay": self._range(data, "weight_decay", required=False),
                             "batch_size": data.get("search_batch_sizes") or None,
                             "solver": data.get("search_solvers") or None,
                             "network": data.get("search_networks") or None,
                             "flip": data.get("search_flips") or None,
                             **{name: data.get(field) or None for name, (field, *_rest) in AUGMENTATION_CHOICES.items()}}
        self._check_augmentation(task)
        if self.search_space["network"]:
            if data.get("network_source") != "standard":
                self.add_error("search_networks", "A search draws among standard networks: choose a standard "
                                                  "network above, or no networks here.")
            elif wrong := [name for name in self.search_space["network"] if name not in task.networks]:
                self.add_error("search_networks", f"Not networks for {task.label.lower()}: {', '.join(wrong)}.")
        metric = data.get("search_metric") or task.headline.series
        if metric != "val_loss" and metric not in {m.series for m in task.metrics}:
            self.add_error("search_metric", f"A {task.label.lower()} model's validation does not report {metric}.")
        self.search_metric = metric
        if data.get("search_parallel") and data.get("search_trials") and data["search_parallel"] > data["search_trials"]:
            self.add_error("search_parallel", "More trials at once than trials in all.")


    def _check_augmentation(self, task: Task) -> None:
        """Each augmentation to draw from, against what the task's models take."""
        fields = {"flip": "search_flips", **{name: field for name, (field, *_rest) in AUGMENTATION_CHOICES.items()}}
        for name, field in fields.items():
            refused = [value for value in self.search_space[name] or () if task.refused({name: value})]
            if refused:
                why = task.refused({name: refused[0]})[name]
                shown = ", ".join(f"{value:g}" if isinstance(value, int | float) else value for value in refused)
                self.add_error(field, f"A model for {task.label.lower()} cannot use {shown}: {why}.")


class MoreTrialsForm(forms.Form):
    trials = forms.IntegerField(min_value=1, max_value=MAX_TRIALS, initial=9, label="More trials")
