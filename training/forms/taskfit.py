"""The New model form's choices a model of the dataset's task cannot take:
a network that is not one of the task's, a network source it does not
offer, an option it refuses (``trainer.tasks.base.Task``)."""

from __future__ import annotations

from typing import Any

from trainer.tasks import Task

from .network import NETWORK_SOURCES

SOURCE_LABELS = dict(NETWORK_SOURCES)


def problems(task: Task, data: dict[str, Any]) -> dict[str, str]:
    """{field: message} for each choice of the form's cleaned ``data`` that
    a model of ``task`` cannot take."""
    found: dict[str, str] = {}
    what = task.label.lower()
    source = data.get("network_source")
    if source and source not in task.network_sources:
        offered = ", ".join(SOURCE_LABELS[name].lower() for name in task.network_sources)
        found["network_source"] = f"A model for {what} starts from: {offered}."
    elif source == "standard" and (name := data.get("standard_network")) not in task.networks:
        offered = ", ".join(info.label for info in task.networks.values())
        found["standard_network"] = f"{name} is not a network for {what}; choose one of: {offered}."
    for name, why in task.refused(data).items():
        found[name] = f"A model for {what} cannot use this yet: {why}."
    return found
