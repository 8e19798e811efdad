"""Layer lists: custom networks written as a YAML or JSON list of layers.

Parsing and validation only, importing neither torch nor Django: the web app
checks a form's layer list with it without loading torch. ``layers.py``
builds the validated list into a network. Each item names one layer type
with its arguments::

    - conv: {out: 20, kernel: 5}
    - maxpool: {kernel: 2}
    - flatten: {}
    - linear: {out: classes}

A bare name (``- relu``) or an empty value (``- relu:``) means no
arguments. The word ``classes`` stands for the dataset's class count in
``out`` arguments. Input sizes (a convolution's input channels, a linear
layer's input features) are inferred when the list is built.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from trainer.safeyaml import AliasesRefused, refuse_aliases

CLASSES = "classes"


class NetworkError(Exception):
    """A network that cannot be built or does not fit the data; ``str(exc)`` is shown to users."""


REQUIRED = object()


@dataclass(frozen=True)
class Argument:
    """One argument of a layer type: ``check`` returns the value to use or
    raises ``ValueError`` with what the value must be."""

    check: Callable[[Any], Any]
    default: Any = REQUIRED


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _positive(value: Any) -> int:
    if _is_int(value) and value > 0:
        return value
    raise ValueError("a positive integer")


def _out(value: Any) -> int | str:
    if value == CLASSES or (_is_int(value) and value > 0):
        return value
    raise ValueError(f"a positive integer or the word '{CLASSES}'")


def _pair_of(check: Callable[[Any], bool], what: str) -> Callable[[Any], Any]:
    def pair(value: Any) -> int | list[int]:
        if check(value):
            return value
        if isinstance(value, list | tuple) and len(value) == 2 and all(check(item) for item in value):
            return list(value)
        raise ValueError(f"{what} or a pair of them [height, width]")

    return pair


_size = _pair_of(lambda value: _is_int(value) and value > 0, "a positive integer")
_offset = _pair_of(lambda value: _is_int(value) and value >= 0, "a non-negative integer")


def _padding(value: Any) -> int | str | list[int]:
    if value == "same":
        return value
    try:
        return _offset(value)
    except ValueError:
        raise ValueError("a non-negative integer, a pair of them [height, width] or 'same'") from None


def _optional_size(value: Any) -> int | list[int] | None:
    return None if value is None else _size(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise ValueError("true or false")


def _number(value: Any) -> float:
    if _is_number(value):
        return float(value)
    raise ValueError("a number")


def _positive_number(value: Any) -> float:
    if _is_number(value) and value > 0:
        return float(value)
    raise ValueError("a positive number")


def _probability(value: Any) -> float:
    if _is_number(value) and 0 <= value < 1:
        return float(value)
    raise ValueError("a number from 0 up to (not including) 1")


def _fraction(value: Any) -> float:
    if _is_number(value) and 0 < value <= 1:
        return float(value)
    raise ValueError("a number above 0, at most 1")


_POOL = {"kernel": Argument(_size), "stride": Argument(_optional_size, None), "padding": Argument(_offset, 0)}

LAYER_TYPES: dict[str, dict[str, Argument]] = {
    "conv": {"out": Argument(_out), "kernel": Argument(_size), "stride": Argument(_size, 1),
             "padding": Argument(_padding, 0), "groups": Argument(_positive, 1), "bias": Argument(_boolean, True)},
    "maxpool": _POOL,
    "avgpool": _POOL,
    "adaptiveavgpool": {"size": Argument(_size, 1)},
    "batchnorm": {"eps": Argument(_positive_number, 1e-5), "momentum": Argument(_fraction, 0.1)},
    "relu": {},
    "gelu": {},
    "sigmoid": {},
    "tanh": {},
    "leakyrelu": {"slope": Argument(_number, 0.01)},
    "dropout": {"p": Argument(_probability, 0.5)},
    "flatten": {},
    "linear": {"out": Argument(_out), "bias": Argument(_boolean, True)},
    "lrn": {"size": Argument(_positive, 5), "alpha": Argument(_number, 1e-4), "beta": Argument(_number, 0.75),
            "k": Argument(_number, 1.0)},
}

EXAMPLE = "conv: {out: 20, kernel: 5}"
# The most characters of a user's value an error message shows.
SHOWN_CHARS = 200


def parse(text: str) -> Any:
    """Read ``text`` as YAML (safe loader). Text that looks like JSON is read as
    JSON first, and its errors are reported as JSON errors when YAML's flow
    style (``[{conv: {out: 20, kernel: 5}}]``) cannot read it either."""
    json_error = None
    if text.lstrip().startswith(("[", "{")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            json_error = f"Not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
    try:
        _refuse_aliases(text)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        if json_error is not None:
            raise NetworkError(json_error) from None
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise NetworkError(f"Not valid YAML: {where}{problem}") from None


def _refuse_aliases(text: str) -> None:
    try:
        refuse_aliases(text)
    except AliasesRefused as exc:
        raise NetworkError(f"Line {exc.line}, column {exc.column}: YAML anchors (&name) and aliases "
                           "(*name) are not allowed in a layer list; write each layer out.") from None


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def _show(value: Any) -> str:
    """A value as the user wrote it, near enough (YAML dates and sets as text),
    cut short where long."""
    return _cut(json.dumps(value, default=str))


def _layer(index: int, item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        item = {item: None}
    if not isinstance(item, dict) or len(item) != 1:
        raise NetworkError(f"Layer {index}: expected one layer type with its arguments, like '{EXAMPLE}'; got {_show(item)}")
    (kind, given), = item.items()
    if kind not in LAYER_TYPES:
        raise NetworkError(f"Layer {index}: unknown type {_cut(repr(kind))}; known: {', '.join(LAYER_TYPES)}")
    allowed = LAYER_TYPES[kind]
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise NetworkError(f"Layer {index} ({kind}): the arguments must be a mapping like {{name: value}}, not {_show(given)}")
    for name in given:
        if name not in allowed:
            choices = ", ".join(allowed) if allowed else "none"
            raise NetworkError(f"Layer {index} ({kind}): unknown argument {_cut(repr(name))}; allowed: {choices}")
    args = {}
    for name, argument in allowed.items():
        if name not in given:
            if argument.default is REQUIRED:
                raise NetworkError(f"Layer {index} ({kind}): missing argument '{name}'")
            args[name] = argument.default
            continue
        try:
            args[name] = argument.check(given[name])
        except ValueError as exc:
            raise NetworkError(f"Layer {index} ({kind}): '{name}' must be {exc}, not {_show(given[name])}") from None
    if kind == "conv" and args["padding"] == "same" and args["stride"] not in (1, [1, 1]):
        raise NetworkError(f"Layer {index} ({kind}): padding 'same' needs stride 1")
    return {"type": kind, "args": args}


def validate_layers(text: str) -> list[dict[str, Any]]:
    """Parse and check a layer list; return its layers as ``{"type", "args"}``
    dicts with every argument filled in (defaults included).

    Raises ``NetworkError`` naming the layer (from 1) and what is wrong.
    """
    if not isinstance(text, str):
        raise NetworkError(f"The layer list must be text, not {type(text).__name__}")
    layers = parse(text)
    if layers is None or layers == []:
        raise NetworkError("The layer list is empty")
    if not isinstance(layers, list):
        raise NetworkError(f"The layer list must be a list of layers (YAML items like '- {EXAMPLE}' or a JSON array), "
                           f"not a {type(layers).__name__}")
    return [_layer(index, item) for index, item in enumerate(layers, 1)]
