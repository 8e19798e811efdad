"""Sweeps: a New model form with several learning rates and/or batch sizes
becomes one job per combination, all in one group."""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product
from typing import Any

MAX_COMBINATIONS = 64


@dataclass(frozen=True)
class Run:
    """One job of a submission: its name and its params."""

    name: str
    params: dict[str, Any]


def parse_list(text: str, kind: type[int] | type[float], what: str) -> list[Any]:
    """A comma-separated list of numbers ("0.1, 0.01"), without repeats, in the
    order given. Raises ValueError with a message for the user."""
    values: list[Any] = []
    for item in re.split(r"[,;\s]+", str(text).strip()):
        if not item:
            continue
        try:
            value = kind(item)
        except ValueError:
            example = "0.1, 0.01" if kind is float else "32, 64"
            raise ValueError(f"“{item}” is not a {'whole ' if kind is int else ''}number; "
                             f"give one {what} or several separated by commas, e.g. {example}.") from None
        if value not in values:
            values.append(value)
    if not values:
        raise ValueError(f"Give a {what}.")
    return values


def count(lrs: list[float], batch_sizes: list[int]) -> int:
    return len(lrs) * len(batch_sizes)


def group_name(name: str, group: str, runs: int) -> str:
    """The group of a submission: the one given, or "<name> sweep" for several jobs."""
    if group or runs == 1:
        return group
    return f"{name} sweep"


def expand(name: str, params: dict[str, Any], lrs: list[float], batch_sizes: list[int]) -> list[Run]:
    """One run per (learning rate, batch size), named after both when there are several."""
    if count(lrs, batch_sizes) > MAX_COMBINATIONS:
        raise ValueError(f"{count(lrs, batch_sizes)} combinations; a sweep has at most {MAX_COMBINATIONS}.")
    combinations = list(product(lrs, batch_sizes))
    if len(combinations) == 1:
        lr, batch = combinations[0]
        return [Run(name, {**params, "lr": lr, "batch_size": batch})]
    return [Run(f"{name} lr={lr:g} bs={batch}", {**params, "lr": lr, "batch_size": batch}) for lr, batch in combinations]
