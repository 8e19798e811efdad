"""Paths into job folders where they sit in a job's params: shown in the
jobs' words, found, and moved into another job's folder. Params hold such
paths for the files a user uploaded to make a job (``upload/…``), and paths
below the dataset roots, shown by the roots' labels."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from web.serverfolders import shown as shown_below_roots


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every string in it, at any depth."""
    if isinstance(value, dict):
        return {k: map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    return change(value) if isinstance(value, str) else value


def in_job_words(value: Any) -> Any:
    """``value`` with every path into a job's folder written as the job and
    the file inside it (``job #12: upload/archive.tar``), and every path
    below a dataset root as its label and the path below it, at any depth."""
    jobs_dir = f"{settings.JOBS_DIR}/"

    def words(text: str) -> str:
        if not text.startswith(jobs_dir):
            return shown_below_roots(text)
        job_id, _, inside = text[len(jobs_dir):].partition("/")
        return f"job #{job_id}: {inside}" if inside else f"job #{job_id}"

    return map_strings(value, words)


def files_inside(value: Any, folder: Path) -> list[str]:
    """The paths in ``value`` that name something inside ``folder``, relative to it."""
    prefix = f"{folder}/"
    found: list[str] = []

    def collect(text: str) -> str:
        if text.startswith(prefix):
            found.append(text[len(prefix):])
        return text

    map_strings(value, collect)
    return found


def moved(value: Any, old: Path, new: Path) -> Any:
    """``value`` with every path inside folder ``old`` pointing to the same place inside ``new``."""
    prefix = f"{old}/"
    return map_strings(value, lambda text: f"{new}/{text[len(prefix):]}" if text.startswith(prefix) else text)
