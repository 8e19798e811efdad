"""What the New model page offers a model of each task, from the task's
registration (``trainer.tasks.base.Task``): its standard networks, where its
network can come from, the run options it refuses and the flips it takes,
the run options only its models take, and the presets that fit it. The page's script shows only these for the
chosen dataset's task; the form refuses the rest (``forms.taskfit``), so
the API does too."""

from __future__ import annotations

from typing import Any

from trainer.tasks import TASKS, Task

__all__ = ["TASKS", "page_tasks"]

from .presets import PRESETS


def _preset_fits(task: Task, fields: dict[str, Any]) -> bool:
    source = fields.get("network_source", "standard")
    return (source in task.network_sources and not task.refused(fields)
            and (source != "standard" or fields.get("standard_network") in task.networks))


def page_tasks() -> dict[str, dict[str, Any]]:
    """{task name: {label, networks, sources, refused, flips, run_options, presets}} as the page's script reads it."""
    return {name: {"label": task.label, "networks": list(task.networks), "sources": list(task.network_sources),
                   "refused": task.hidden_options, "flips": list(task.flips) if task.flips else None,
                   "run_options": list(task.run_options),
                   "presets": [preset for preset, given in PRESETS.items() if _preset_fits(task, given["fields"])]}
            for name, task in TASKS.items() if task.trains}
