"""What a run option only some tasks' models take is (``base.RUN_OPTIONS``
declares them, a task's registration names those its models take): its
name, label and help as the New model page shows them, its default, and the
values it takes, checked alike by the web's form and by the trainer.
Torch-free and Django-free."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunOption:
    """A run option (a job param of that name): a number of ``kind`` (float
    or int) from ``minimum`` to ``maximum`` (None: unbounded on that side),
    or, with ``choices`` ((value, label) pairs), one of their values."""

    name: str
    label: str
    help_text: str
    default: float | int | str
    kind: type = float
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in (float, int, str) or (self.kind is str) != bool(self.choices):
            raise ValueError(f"The run option {self.name!r} is a float or an int, or a str with choices.")
        self.check(self.default)  # a default it refuses would fail every run that leaves it blank

    @property
    def expects(self) -> str:
        """What it takes, in words: the message of a value refused."""
        if self.choices:
            return f"The {self.label.lower()} is one of: {', '.join(value for value, _ in self.choices)}."
        what = "a whole number" if self.kind is int else "a number"
        if self.minimum is not None and self.maximum is not None:
            return f"The {self.label.lower()} is {what} from {self.minimum:g} to {self.maximum:g}."
        if self.minimum is not None:
            return f"The {self.label.lower()} is {what} of at least {self.minimum:g}."
        if self.maximum is not None:
            return f"The {self.label.lower()} is {what} of at most {self.maximum:g}."
        return f"The {self.label.lower()} is {what}."

    def check(self, value: Any) -> float | int | str:
        """``value`` as the option takes it; ValueError (``expects``) for any
        other, a run's params being JSON that anyone could have written."""
        if self.choices:
            if value not in (chosen for chosen, _ in self.choices):
                raise ValueError(self.expects)
            return value
        numeric = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if (not numeric or (self.kind is int and not whole) or (self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)):
            raise ValueError(self.expects)
        return self.kind(value)

    def value_in(self, params: Mapping[str, Any]) -> float | int | str:
        """Its value in a run's ``params``, checked: the default where absent
        or None (a run made before the option, or left blank)."""
        given = params.get(self.name)
        return self.default if given is None else self.check(given)
