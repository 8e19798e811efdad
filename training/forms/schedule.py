"""What decides the learning rate at each step: the dataset, epochs, batch
sizes, base rates, the policy and its parameters, and the devices and nodes
that make the world size. It is a form of its own because the learning rate
preview validates these fields alone; the New model form builds on it."""

from __future__ import annotations

import math
from typing import Any

from django import forms

from jobs.forms import DevicesField
from jobs.models import Job
from trainer import lr_policy as policies
from trainer.steps import total_steps
from web.numberfield import NumberField

from .. import fewsteps, sweeps
from ..services import built_dataset
from .floatfield import float_field

NO_DATASET_STEPS_PER_EPOCH = 100

# The most machines one job may span.
MAX_NODES = 64


def world_size(resources: dict[str, Any]) -> int:
    """How many processes train: on each node (machine), one per GPU asked
    for, one on the CPU."""
    nodes = int(resources.get("nodes") or 1)
    if resources.get("device") != "gpu":
        return nodes
    return nodes * (len(resources["ids"]) if "ids" in resources else int(resources.get("count") or 1))


class ScheduleForm(DevicesField):
    """What decides the learning rate at each step: the fields of the
    preview, also part of the New model form."""

    dataset = forms.IntegerField(required=False, widget=forms.Select)
    epochs = forms.IntegerField(min_value=1, max_value=100_000, initial=30, label="Training epochs")
    batch_size = forms.CharField(initial="64", label="Batch size",
                                 help_text="Per device. Several, separated by commas, make a sweep: one job each.")
    batch_schedule = forms.CharField(required=False, label="Batch size schedule",
                                     help_text="epoch:batch pairs, e.g. 10:128, 20:256: from that epoch on, that batch size.")
    lr = forms.CharField(initial="0.01", label="Base learning rate",
                         help_text="Several, separated by commas, make a sweep: one job each.")
    lr_policy = forms.ChoiceField(choices=[(name, label) for name, label, _ in policies.POLICIES], initial="step",
                                  label="Policy")
    step_percent = float_field(policies.PARAM_LABELS["step_percent"], policies.PARAM_DEFAULTS["step_percent"],
                               maximum=100, required=False)
    gamma = NumberField(label=policies.PARAM_LABELS["gamma"], initial=policies.PARAM_DEFAULTS["gamma"], required=False)
    milestones_percent = forms.CharField(label=policies.PARAM_LABELS["milestones_percent"], required=False,
                                         initial=", ".join(f"{v:g}" for v in policies.PARAM_DEFAULTS["milestones_percent"]))
    power = NumberField(label=policies.PARAM_LABELS["power"], initial=policies.PARAM_DEFAULTS["power"], required=False)
    warmup_percent = float_field(policies.PARAM_LABELS["warmup_percent"], policies.PARAM_DEFAULTS["warmup_percent"],
                                 maximum=99.9, required=False, help_text="A linear ramp from almost 0 at the start.")
    start_factor = float_field(policies.PARAM_LABELS["start_factor"], policies.PARAM_DEFAULTS["start_factor"],
                               required=False)
    peak_percent = float_field(policies.PARAM_LABELS["peak_percent"], policies.PARAM_DEFAULTS["peak_percent"],
                               maximum=99.9, required=False)
    end_factor = float_field(policies.PARAM_LABELS["end_factor"], policies.PARAM_DEFAULTS["end_factor"], required=False)
    nodes = forms.IntegerField(min_value=1, max_value=MAX_NODES, initial=1, required=False, label="Nodes (machines)",
                               help_text="Over 1, the job runs on that many machines at once, each with a worker of its "
                                         "own and the devices above (× devices per node), and trains as one.")
    scale_lr = forms.BooleanField(required=False, initial=True,
                                  label="Linear scaling rule with gradual warmup for several GPUs",
                                  help_text="N GPUs train at N times the rate, warming up over at least 5% of training.")

    dataset_job: Job | None = None
    dataset_info: dict[str, Any] | None = None

    def clean_dataset(self) -> int | None:
        value = self.cleaned_data.get("dataset")
        if value is None:
            return None
        self.dataset_job, self.dataset_info = built_dataset(value)
        return value

    def resources(self) -> dict[str, Any]:
        nodes = self.cleaned_data.get("nodes") or 1
        return {**super().resources(), "nodes": nodes} if nodes > 1 else super().resources()

    def clean_batch_size(self) -> list[int]:
        try:
            sizes = sweeps.parse_list(self.cleaned_data["batch_size"], int, "batch size")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if any(not 1 <= size <= 65536 for size in sizes):
            raise forms.ValidationError("Batch sizes are from 1 to 65536.")
        return sizes

    def clean_lr(self) -> list[float]:
        try:
            rates = sweeps.parse_list(self.cleaned_data["lr"], float, "learning rate")
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if any(not (math.isfinite(rate) and 0 < rate <= 100) for rate in rates):
            raise forms.ValidationError("Learning rates are numbers above 0 (and at most 100).")
        return rates

    def clean_batch_schedule(self) -> list[list[int]]:
        try:
            return policies.parse_batch_schedule(self.cleaned_data.get("batch_schedule") or "")
        except ValueError as exc:
            raise forms.ValidationError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None

    def clean_milestones_percent(self) -> list[float]:
        try:
            return policies.parse_milestones(self.cleaned_data.get("milestones_percent") or "")
        except ValueError as exc:
            raise forms.ValidationError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("lr_policy"):
            problems = policies.validate(self.policy())
            if problems:
                self.add_error("lr_policy", problems)
        schedule, epochs = data.get("batch_schedule"), data.get("epochs")
        if schedule and epochs and schedule[-1][0] >= epochs:
            self.add_error("batch_schedule", f"Epoch {schedule[-1][0]} is past the last epoch ({epochs - 1}, counted from 0).")
        if self.dataset_info and data.get("batch_size") and epochs and "batch_schedule" in data:
            train = self.dataset_info["splits"]["train"]["count"]
            workers = self.workers()
            for size in data["batch_size"]:
                if total_steps(train, size, workers, epochs, schedule) == 0:
                    self.add_error("batch_size", f"The dataset's {train} training images do not make one batch of {size} "
                                                 f"for each of {workers} process(es); lower the batch size.")
        return data

    def workers(self) -> int:
        """The world size the devices asked for make (1 while they are not valid)."""
        if any(self.has_error(field) for field in ("device", "gpu_count", "gpu_ids", "nodes")):
            return 1
        return world_size(self.resources())

    def policy(self) -> dict[str, Any]:
        """The policy as params store it: its name and every parameter."""
        data = self.cleaned_data
        policy: dict[str, Any] = {"name": data["lr_policy"]}
        for key, default in policies.PARAM_DEFAULTS.items():
            value = data.get(key)
            policy[key] = default if value in (None, []) else value
        return policy

    def steps(self) -> int:
        """Total steps of the first job: from the dataset's training images,
        or 100 a epoch when no dataset is chosen."""
        data = self.cleaned_data
        workers = self.workers()
        if self.dataset_info is None:
            return data["epochs"] * NO_DATASET_STEPS_PER_EPOCH
        train = self.dataset_info["splits"]["train"]["count"]
        return total_steps(train, data["batch_size"][0], workers, data["epochs"], data["batch_schedule"])

    def few_steps_warning(self) -> str:
        """The first job's warning of a run of too few steps (``fewsteps``);
        "" without a dataset or with steps enough."""
        if self.dataset_info is None:
            return ""
        data = self.cleaned_data
        return fewsteps.warning(self.dataset_info["splits"]["train"]["count"], data["batch_size"][0], self.workers(),
                                data["epochs"], data["batch_schedule"])

    def preview(self) -> dict[str, Any]:
        """The curve of the first job's learning rate, with the rate and warmup
        that several GPUs bring."""
        data = self.cleaned_data
        workers = self.workers()
        policy = policies.warmup_for(self.policy(), workers, data["scale_lr"])
        base = policies.effective_lr(data["lr"][0], workers, data["scale_lr"])
        steps = self.steps()
        return {"points": [[step, lr] for step, lr in policies.curve(policy, base, steps)], "effective_lr": base,
                "total_steps": steps, "description": policies.describe(policy, base), "world_size": workers,
                "warmup_percent": float(policies.resolve(policy).get("warmup_percent", 0.0)),
                **({"warning": warning} if (warning := self.few_steps_warning()) else {})}
