"""What a task says about itself that the web side and the trainer share,
torch-free and Django-free: its name and label, its metrics and the chart
series its runs report (the event kind and field each is read from), the
format of its datasets' targets (``trainer.targets``), the modules of its
dataset planner (``trainer.buildplan``), trainer side
(``trainer.tasks.training``) and model archive (``trainer.export``), and
what the web can do with a model of it (``uses``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainer import eventkinds as kinds
from trainer.catalog import NetworkInfo

from . import uses
from .runoptions import RunOption

if TYPE_CHECKING:
    from trainer.targets import TargetFormat

# The series every training loop reports, whatever its task.
LOOP_SERIES: dict[str, tuple[str, str]] = {
    "train_loss": (kinds.TRAIN, "loss"),
    "val_loss": (kinds.VAL, "loss"),
    "lr": (kinds.TRAIN, "lr"),
    "images_per_s": (kinds.TRAIN, "images_per_s"),
    "data_wait": (kinds.TRAIN, "data_wait"),
}
# Where a model's network can come from (the New model form's choices):
# a standard network of the task's, a list of layers, Python code, the
# network and weights of an earlier model, or of a pretrained model.
NETWORK_SOURCES = ("standard", "layers", "python", "previous", "pretrained")
# A run's params an option is "off" with: a task that refuses an option
# refuses it with any other value.
OFF_VALUES = (None, 0, 0.0, "", "none", False)
# What the evaluation job (``EVALUATE``) can run a model over: a split of
# its dataset (Evaluate, Compare), or new labelled images in a list, a
# server folder or an archive (Classify many).
EVALUATION_SOURCES = ("split", "list", "folder", "archive")
# The evaluation's options only some tasks take (the New evaluation form and
# the Evaluate form show them for those alone), with their defaults: the
# score a detection needs to count in the report's precision, recall and
# lists, and the label format of new images (an import format of the task's
# datasets, or found from their layout).
EVALUATION_OPTIONS: dict[str, Any] = {"score_threshold": 0.5, "label_format": "auto"}
# The run options only some tasks' models take (``Task.run_options``; the New
# model page has a field for each, shows it for those tasks alone and fills
# in the default when left blank; the trainer reads it with ``Task.run_option``).
RUN_OPTIONS: dict[str, RunOption] = {option.name: option for option in (
    RunOption("score_threshold", "Score threshold",
              "Precision and recall on the live charts count the detections scored at least this.",
              default=EVALUATION_OPTIONS["score_threshold"], minimum=0.0, maximum=1.0),
    RunOption("segmentation_loss", "Loss",
              "What each pixel's class is learnt by; ignored pixels count for nothing in any. Weighting by class "
              "(median frequency: each class's weight the median share of the training pixels over its own) lifts "
              "small classes; Dice scores each class's overlap whatever its size.",
              default="cross_entropy", kind=str, choices=(
                  ("cross_entropy", "Cross-entropy"),
                  ("weighted_cross_entropy", "Cross-entropy weighted by class"),
                  ("dice", "Dice"),
                  ("cross_entropy_dice", "Cross-entropy plus Dice"))),
)}

def component_series(name: str) -> str:
    """The chart series of the loss's part ``name``."""
    return f"loss_part_{name}"


# Kinds the training section of the job page follows live.
PAGE_KINDS = (kinds.NETWORK, kinds.TRAIN, kinds.PERF, kinds.HARDWARE, kinds.PROFILE, kinds.VAL, kinds.LAYERS,
              kinds.BEST, kinds.SNAPSHOT, kinds.RESUME, kinds.RESULT, kinds.STATUS)


@dataclass(frozen=True)
class Metric:
    """A validation metric of a task, a share from 0 to 1 where higher is
    better: ``field`` of the ``val`` event (``test_<field>`` and
    ``val_<field>`` in a result, ``val_<field>`` in a snapshot's metrics and
    as its chart series), ``label`` as pages show it."""

    field: str
    label: str
    # Shown only for datasets of more classes than this: top-5 accuracy is
    # always 100% with five classes or fewer.
    above_classes: int = 0

    @property
    def series(self) -> str:
        return f"val_{self.field}"

    def page_data(self) -> dict[str, str]:
        return {"field": self.field, "label": self.label, "series": self.series}


@dataclass(frozen=True)
class Task:
    name: str
    label: str
    metrics: tuple[Metric, ...]
    # The title of the chart axis its metrics share, e.g. "accuracy".
    metrics_title: str
    # What its datasets store for each image beside the pixels (numpy).
    targets: TargetFormat
    # The module of its trainer side, imported by the trainer alone (torch);
    # None while its models cannot be trained (its datasets can be built).
    training: str | None
    # The module whose ``plan(config, partial, roots)`` reads a dataset
    # build's source into the images to store and their targets
    # (``trainer.buildplan``).
    plan: str
    # The module that makes its models' archive (``trainer.export``),
    # imported by the export job alone (torch): its ``FILES`` and
    # ``archive_files(loaded)``. None while its models cannot be exported;
    # a task that offers ``uses.EXPORT`` names one.
    export: str | None = None
    # The web features that can use a model of this task (names from
    # ``uses``): a task offers none it does not name.
    model_uses: frozenset[str] = frozenset()
    # Where the evaluation job takes its models' images from
    # (``EVALUATION_SOURCES``): a task whose report is its own may take
    # only the splits of the model's dataset, and then offers no Classify many.
    evaluation_sources: tuple[str, ...] = EVALUATION_SOURCES
    # How a folder or an archive of new images gives their labels, as the
    # New evaluation page says it.
    labelled_files: str = "top-level subfolders named after the model's classes give the labels"
    # The model page's button to the New evaluation page, where new images are taken.
    files_action: str = "Classify many"
    # The evaluation options it takes (``EVALUATION_OPTIONS``).
    evaluation_options: tuple[str, ...] = ()
    # The run options its models take (``RUN_OPTIONS``); another task's are refused.
    run_options: tuple[str, ...] = ()
    # The standard networks its models can be (``trainer.catalog``), in the
    # New model form's order.
    networks: Mapping[str, NetworkInfo] = dataclasses.field(default_factory=dict)
    # Where its models' networks can come from (``NETWORK_SOURCES``).
    network_sources: tuple[str, ...] = NETWORK_SOURCES
    # The run options (job params) its runs cannot take, unless off
    # (``OFF_VALUES``), each with why, as it ends "A model for <task> cannot
    # use this yet: …"; and the random flips they take (None: every one),
    # any other refused with the reason given for "flip".
    refused_options: Mapping[str, str] = dataclasses.field(default_factory=dict)
    flips: tuple[str, ...] | None = None
    # What a run's best snapshot is chosen by when early stopping watches
    # nothing: "val_loss" (lowest), or a metric's series (highest).
    best_by: str = "val_loss"
    # The parts of its training loss that runs report (``components`` of a
    # ``train`` event, by the name the network gives each) and charted apart:
    # {name: label as a chart's legend shows it}. A part not named here is
    # summed into the loss but not charted.
    loss_components: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # The scores of each class its runs report at their end, split by split
    # (the result's ``per_class``, from its evaluation's ``per_class``):
    # {field of a class's row: label as the result's table heads it}.
    class_metrics: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def trains(self) -> bool:
        """Whether models can be trained on its datasets."""
        return self.training is not None

    @property
    def headline(self) -> Metric:
        """The metric that sums a run up: the first (what early stopping and
        the comparison of runs offer beside the loss)."""
        return self.metrics[0]

    def __post_init__(self) -> None:
        if not self.metrics:
            raise ValueError(f"The task “{self.name}” names no metric: its runs would have nothing to compare.")
        if unknown := set(self.network_sources) - set(NETWORK_SOURCES):
            raise ValueError(f"The task “{self.name}” names unknown network sources ({', '.join(sorted(unknown))}).")
        if unknown := set(self.evaluation_sources) - set(EVALUATION_SOURCES):
            raise ValueError(f"The task “{self.name}” names unknown evaluation sources ({', '.join(sorted(unknown))}).")
        if unknown := set(self.run_options) - RUN_OPTIONS.keys():
            raise ValueError(f"The task “{self.name}” names unknown run options ({', '.join(sorted(unknown))}).")
        if unknown := set(self.evaluation_options) - EVALUATION_OPTIONS.keys():
            raise ValueError(f"The task “{self.name}” names unknown evaluation options ({', '.join(sorted(unknown))}).")
        if unknown := self.model_uses - uses.USES:
            raise ValueError(f"The task “{self.name}” names unknown uses ({', '.join(sorted(unknown))}): "
                             f"the uses are {', '.join(sorted(uses.USES))}.")
        if uses.EXPORT in self.model_uses and self.export is None:
            raise ValueError(f"The task “{self.name}” offers export but names no module that makes the archive.")

    def refused(self, params: Mapping[str, Any]) -> dict[str, str]:
        """The options of a run's ``params`` this task cannot take: {param:
        why}, in the order the task names them."""
        chosen: dict[str, str] = {}
        for name, why in self.refused_options.items():
            if name == "flip":
                if self.flips is not None and (params.get("flip") or "none") not in self.flips:
                    chosen[name] = why
            elif params.get(name) not in OFF_VALUES:
                chosen[name] = why
        for name in self.others_run_options:
            if params.get(name) is not None:
                chosen[name] = f"the {RUN_OPTIONS[name].label.lower()} is an option of other tasks' models"
        return chosen

    @property
    def others_run_options(self) -> list[str]:
        """The run options of other tasks' models (``RUN_OPTIONS``) that this task's refuse."""
        return [name for name in RUN_OPTIONS if name not in self.run_options]

    @property
    def hidden_options(self) -> list[str]:
        """The options the New model page hides for this task: those it
        refuses outright (of the flips, it shows those it takes). Run options
        are shown for the tasks that take them alone (``run_options``)."""
        return [name for name in self.refused_options if name != "flip"]

    def run_option(self, params: Mapping[str, Any], name: str) -> float | int | str:
        """The value of its run option ``name`` in a run's ``params``,
        checked (ValueError): the default where absent (a run made before
        the option existed) or left blank."""
        if name not in self.run_options:
            raise ValueError(f"A {self.label.lower()} model takes no run option {name!r}.")
        return RUN_OPTIONS[name].value_in(params)

    def evaluates_from(self, source: str) -> bool:
        """Whether the evaluation job takes a model of this task over ``source`` (``EVALUATION_SOURCES``)."""
        return self.offers(uses.EVALUATE) and source in self.evaluation_sources

    def takes_evaluation_option(self, option: str) -> bool:
        """Whether its evaluations take ``option`` (``EVALUATION_OPTIONS``);
        ValueError for any other name."""
        if option not in EVALUATION_OPTIONS:
            raise ValueError(f"Unknown evaluation option {option!r}: the options are {', '.join(EVALUATION_OPTIONS)}.")
        return option in self.evaluation_options

    def offers(self, use: str) -> bool:
        """Whether a model of this task can be used for ``use`` (a name from
        ``uses``); ValueError for any other name, so a misspelt question fails."""
        return uses.check(use) in self.model_uses

    @property
    def metric_series(self) -> dict[str, tuple[str, str]]:
        """Its chart series beside the loop's: name -> (event kind, field of its data)."""
        return {metric.series: (kinds.VAL, metric.field) for metric in self.metrics}

    @property
    def component_series(self) -> dict[str, tuple[str, str]]:
        """The chart series of its loss's parts: name -> (event kind, path of
        the field in its data, the parts of a dotted path nested)."""
        return {component_series(name): (kinds.TRAIN, f"{kinds.COMPONENTS}.{name}") for name in self.loss_components}

    @property
    def series(self) -> dict[str, tuple[str, str]]:
        return {**LOOP_SERIES, **self.metric_series, **self.component_series}

    def shown_metrics(self, classes: int | None) -> list[dict[str, str]]:
        """The metrics a page shows for a dataset of ``classes`` classes
        (None: not known), as the page's scripts read them."""
        return [metric.page_data() for metric in self.metrics if classes is None or classes > metric.above_classes]

    def series_fields(self) -> dict[str, dict[str, str]]:
        """{event kind: {series name: field}} of the kinds that carry points."""
        fields: dict[str, dict[str, str]] = {}
        for name, (kind, key) in self.series.items():
            fields.setdefault(kind, {})[name] = key
        return fields

    def page_vocabulary(self) -> dict[str, Any]:
        """What a page script needs to follow a run of this task: the event
        kinds by name, the series each metric kind carries and its loss's
        parts (series and label)."""
        return {"kinds": {kind: kind for kind in PAGE_KINDS}, "series_fields": self.series_fields(),
                "metrics_title": self.metrics_title,
                "loss_components": [{"series": component_series(name), "label": label}
                                    for name, label in self.loss_components.items()],
                "class_metrics": [{"field": field, "label": label} for field, label in self.class_metrics.items()]}
