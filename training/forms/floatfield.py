"""The number field most of the New model form's settings are: a float,
at least 0 unless told otherwise."""

from __future__ import annotations

from typing import Any

from web.numberfield import NumberField


def float_field(label: str, initial: float | None, minimum: float = 0.0, maximum: float | None = None,
                **kwargs: Any) -> NumberField:
    return NumberField(label=label, initial=initial, min_value=minimum, max_value=maximum, **kwargs)
