"""The registry of job kinds. A kind says which home-page tab lists its jobs
and which command runs one; the worker does the rest the same way for all.

Apps register their kinds when Django starts (``AppConfig.ready``).
``JOB_KINDS_MODULES`` names extra modules to import for their registrations
(the test suite adds a quick sleeping kind this way).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import Job

CATEGORIES = (("datasets", "Datasets"), ("models", "Models"), ("checks", "Device checks"))


@dataclass(frozen=True)
class JobKind:
    name: str
    label: str
    category: str
    # argv of the job's process; it runs with the job folder as working
    # directory and finds its settings in config.json there.
    command: Callable[[Job], list[str]]
    # What the job page adds for this kind: a template and its context.
    page_template: str = ""
    page_context: Callable[[Job], dict] | None = None


_registry: dict[str, JobKind] = {}


def register(kind: JobKind) -> None:
    if kind.category not in dict(CATEGORIES):
        raise ValueError(f"unknown category {kind.category!r}")
    _registry[kind.name] = kind


def get(name: str) -> JobKind:
    return _registry[name]


def names() -> list[str]:
    return list(_registry)


def names_in(category: str) -> list[str]:
    return [kind.name for kind in _registry.values() if kind.category == category]


def python_module(module: str) -> Callable[[Job], list[str]]:
    """The command for a kind implemented as ``python -m module config.json``."""
    return lambda job: [sys.executable, "-m", module, "config.json"]


register(JobKind("devicecheck", "Device check", "checks", python_module("trainer.devicecheck")))
