"""Learning rate policies, batch size schedules and their form helpers.

Pure Python on purpose: the web app imports this module to validate the form
and to preview a policy's curve, without torch, numpy or Django.

A policy is a dict such as ``{"name": "step", "step_percent": 33.0, "gamma": 0.1}``.
As in DIGITS, its parameters are in percent of training, so a policy keeps its
shape whatever the number of epochs or the batch size. The formulas are Caffe's
with the iteration replaced by the percentage of training done, ``p*100``:

- fixed: ``base``
- step: ``base * gamma ** floor(p*100 / step_percent)``
- multistep: ``base * gamma ** (number of milestones_percent <= p*100)``
- exp: ``base * gamma ** (p*100)`` (gamma per 1% of training)
- inv: ``base * (1 + gamma * p*100) ** -power``
- poly: ``base * (1 - p) ** power``
- sigmoid: ``base / (1 + exp(-gamma * (p*100 - step_percent)))``
- cosine: ``base * 0.5 * (1 + cos(pi * p))``
- onecycle: linear from ``base/25`` up to ``base`` over the first 30%, then a
  half cosine down to ``base/1e4`` (the shape of PyTorch's OneCycleLR)
- linear: piecewise linear, from ``base * start_factor`` up to ``base`` at
  ``peak_percent``, then down to ``base * end_factor`` at the end (airbench's
  schedule: 0.2, 23%, 0.07)

Every policy but onecycle and linear (which have their own ramp) takes ``warmup_percent``:
during the first ``warmup_percent`` of training the rate is multiplied by
``(step + 1) / warmup_steps``, a linear ramp from almost 0 to the policy's rate.

The rate is a pure function of the step, so a resumed job continues on exactly
the curve it left.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

POLICIES: list[tuple[str, str, list[str]]] = [
    ("fixed", "Fixed", ["warmup_percent"]),
    ("step", "Step down", ["step_percent", "gamma", "warmup_percent"]),
    ("multistep", "Step down at milestones", ["milestones_percent", "gamma", "warmup_percent"]),
    ("exp", "Exponential decay", ["gamma", "warmup_percent"]),
    ("inv", "Inverse decay", ["gamma", "power", "warmup_percent"]),
    ("poly", "Polynomial decay", ["power", "warmup_percent"]),
    ("sigmoid", "Sigmoid decay", ["step_percent", "gamma", "warmup_percent"]),
    ("cosine", "Cosine annealing", ["warmup_percent"]),
    ("onecycle", "One cycle", []),
    ("linear", "Piecewise linear: up to a peak, then down", ["start_factor", "peak_percent", "end_factor"]),
]
"""(name, label, parameters the policy uses), in the form's order."""

PARAM_DEFAULTS: dict[str, Any] = {
    "step_percent": 33.0,
    "gamma": 0.1,
    "milestones_percent": [50.0, 75.0],
    "power": 1.0,
    "warmup_percent": 0.0,
    "start_factor": 0.2,
    "peak_percent": 23.0,
    "end_factor": 0.07,
}
"""The form's initial values (those of the default policy, step)."""

DEFAULTS: dict[str, dict[str, Any]] = {
    "fixed": {"warmup_percent": 0.0},
    "step": {"step_percent": 33.0, "gamma": 0.1, "warmup_percent": 0.0},
    "multistep": {"milestones_percent": [50.0, 75.0], "gamma": 0.1, "warmup_percent": 0.0},
    "exp": {"gamma": 0.95, "warmup_percent": 0.0},
    "inv": {"gamma": 0.1, "power": 0.75, "warmup_percent": 0.0},
    "poly": {"power": 1.0, "warmup_percent": 0.0},
    "sigmoid": {"step_percent": 50.0, "gamma": -0.1, "warmup_percent": 0.0},
    "cosine": {"warmup_percent": 0.0},
    "onecycle": {},
    "linear": {"start_factor": 0.2, "peak_percent": 23.0, "end_factor": 0.07},
}
"""Per policy, the parameters it uses and the values it takes when one is missing."""

PARAM_LABELS: dict[str, str] = {
    "step_percent": "Step size (% of training)",
    "gamma": "Gamma",
    "milestones_percent": "Milestones (% of training)",
    "power": "Power",
    "warmup_percent": "Warmup (% of training)",
    "start_factor": "Start (× base rate)",
    "peak_percent": "Peak at (% of training)",
    "end_factor": "End (× base rate)",
}

ONECYCLE_PEAK_PERCENT = 30.0
ONECYCLE_START_DIVISOR = 25.0
ONECYCLE_END_DIVISOR = 1e4
SCALED_WARMUP_PERCENT = 5.0
"""The least warmup when the rate is scaled by the world size (Goyal et al. 2017)."""
MAX_GROWTH = 1e6
"""How many times its base rate a policy's rate may reach (a gamma above 1 makes it grow)."""

_NAMES = [name for name, _label, _params in POLICIES]


def resolve(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's name and the parameters it uses, missing ones filled from DEFAULTS.

    Parameters the policy does not use (the form sends them all) are dropped.
    """
    name = policy.get("name")
    if name not in DEFAULTS:
        raise ValueError(f"unknown learning rate policy {name!r}; choose one of {', '.join(_NAMES)}")
    resolved: dict[str, Any] = {"name": name}
    for key, default in DEFAULTS[name].items():
        value = policy.get(key)
        resolved[key] = default if value is None else value
    return resolved


def warmup_steps(policy: Mapping[str, Any], total_steps: int) -> int:
    """How many of the first steps are in the warmup ramp (those with p*100 < warmup_percent)."""
    percent = float(resolve(policy).get("warmup_percent", 0.0))
    if percent <= 0:
        return 0
    # Rounded before ceil so that float noise (0.7 * 1000 / 100) cannot add a step.
    return min(total_steps, math.ceil(round(percent * total_steps / 100.0, 9)))


def lr_at(policy: Mapping[str, Any], base_lr: float, step: int, total_steps: int) -> float:
    """The learning rate at ``step`` (0-based) of a training of ``total_steps`` steps.

    Steps past the end are treated as the end.
    """
    if total_steps < 1:
        raise ValueError("total_steps must be at least 1")
    if step < 0:
        raise ValueError("step must not be negative")
    params = resolve(policy)
    step = min(step, total_steps)
    percent = step * 100.0 / total_steps
    lr = _policy_lr(params, float(base_lr), percent)
    ramp = warmup_steps(params, total_steps)
    if step < ramp:
        lr *= (step + 1) / ramp
    return lr


def _policy_lr(params: dict[str, Any], base: float, percent: float) -> float:
    name = params["name"]
    progress = percent / 100.0
    if name == "fixed":
        return base
    if name == "step":
        return base * float(params["gamma"]) ** math.floor(percent / float(params["step_percent"]))
    if name == "multistep":
        passed = sum(1 for milestone in params["milestones_percent"] if float(milestone) <= percent)
        return base * float(params["gamma"]) ** passed
    if name == "exp":
        return base * float(params["gamma"]) ** percent
    if name == "inv":
        return base * (1.0 + float(params["gamma"]) * percent) ** -float(params["power"])
    if name == "poly":
        return base * (1.0 - progress) ** float(params["power"])
    if name == "sigmoid":
        exponent = -float(params["gamma"]) * (percent - float(params["step_percent"]))
        # exp overflows past ~709; the rate is then 0 to double precision anyway.
        return 0.0 if exponent > 700 else base / (1.0 + math.exp(exponent))
    if name == "cosine":
        return base * 0.5 * (1.0 + math.cos(math.pi * progress))
    if name == "linear":
        return _linear(params, base, percent)
    return _onecycle(base, percent)


def _linear(params: dict[str, Any], base: float, percent: float) -> float:
    peak = float(params["peak_percent"])
    start, end = float(params["start_factor"]), float(params["end_factor"])
    if percent < peak:
        return base * (start + (1.0 - start) * percent / peak)
    fraction = (percent - peak) / (100.0 - peak) if peak < 100 else 1.0
    return base * (1.0 + (end - 1.0) * fraction)


def _onecycle(base: float, percent: float) -> float:
    start = base / ONECYCLE_START_DIVISOR
    end = base / ONECYCLE_END_DIVISOR
    if percent < ONECYCLE_PEAK_PERCENT:
        return start + (base - start) * percent / ONECYCLE_PEAK_PERCENT
    fraction = (percent - ONECYCLE_PEAK_PERCENT) / (100.0 - ONECYCLE_PEAK_PERCENT)
    return end + (base - end) * 0.5 * (1.0 + math.cos(math.pi * fraction))


def curve(policy: Mapping[str, Any], base_lr: float, total_steps: int, points: int = 200) -> list[tuple[int, float]]:
    """(step, lr) at up to ``points`` steps spread evenly from the first step to the last."""
    if total_steps < 1:
        raise ValueError("total_steps must be at least 1")
    if points < 2:
        raise ValueError("points must be at least 2")
    last = total_steps - 1
    steps = sorted({round(i * last / (points - 1)) for i in range(points)})
    return [(step, lr_at(policy, base_lr, step, total_steps)) for step in steps]


def effective_lr(base_lr: float, world_size: int, scale_lr: bool) -> float:
    """The linear scaling rule: with ``scale_lr``, N processes train at N times the rate."""
    return base_lr * world_size if scale_lr else base_lr


def warmup_for(policy: Mapping[str, Any], world_size: int, scale_lr: bool) -> dict[str, Any]:
    """A copy of the policy whose warmup is at least 5% when the rate is scaled up.

    A scaled rate needs a gradual warmup (Goyal et al. 2017); onecycle already
    and linear already start low and are returned unchanged.
    """
    adjusted = dict(policy)
    if scale_lr and world_size > 1 and "warmup_percent" in DEFAULTS.get(adjusted.get("name"), {}):
        current = adjusted.get("warmup_percent") or 0.0
        adjusted["warmup_percent"] = max(float(current), SCALED_WARMUP_PERCENT)
    return adjusted


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def validate(policy: Any) -> list[str]:
    """The problems with a policy, as sentences for the user; empty when it is usable."""
    if not isinstance(policy, Mapping):
        return ["The learning rate policy must be an object with a name."]
    name = policy.get("name")
    if name not in DEFAULTS:
        return [f"Unknown learning rate policy {name!r}; choose one of {', '.join(_NAMES)}."]
    params = resolve(policy)
    problems: list[str] = []
    numbers: dict[str, float] = {}
    for key, value in params.items():
        if key in ("name", "milestones_percent"):
            continue
        number = _number(value)
        if number is None:
            problems.append(f"{PARAM_LABELS[key]} must be a number.")
        else:
            numbers[key] = number

    def check(key: str, ok: bool, message: str) -> None:
        if key in numbers and not ok:
            problems.append(f"{PARAM_LABELS[key]} {message}.")

    gamma, power, step_percent = numbers.get("gamma"), numbers.get("power"), numbers.get("step_percent")
    warmup = numbers.get("warmup_percent")
    check("warmup_percent", warmup is not None and 0 <= warmup < 100, "must be at least 0 and below 100")
    if name == "step":
        check("step_percent", step_percent is not None and 0 < step_percent <= 100, "must be more than 0 and at most 100")
    if name == "sigmoid":
        check("step_percent", step_percent is not None and 0 <= step_percent <= 100, "must be between 0 and 100")
    if name in ("step", "multistep", "exp"):
        check("gamma", gamma is not None and gamma > 0, "must be more than 0")
    if name == "inv":
        check("gamma", gamma is not None and gamma >= 0, "must not be negative")
    if name in ("inv", "poly"):
        check("power", power is not None and power >= 0, "must not be negative")
    if name == "multistep":
        problems.extend(_milestone_problems(params["milestones_percent"]))
    if name == "linear":
        peak = numbers.get("peak_percent")
        check("peak_percent", peak is not None and 0 < peak < 100, "must be more than 0 and below 100")
        for key in ("start_factor", "end_factor"):
            check(key, numbers.get(key) is not None and numbers[key] >= 0, "must not be negative")
    return problems or _growth_problems(params)


def _growth_problems(params: dict[str, Any]) -> list[str]:
    """A rate that overflows or grows past MAX_GROWTH times its base somewhere
    in training. Checking each whole percent suffices: every policy's largest
    factor is at a whole percent (the step policies change only at one, exp
    and the decays are monotonic)."""
    try:
        factors = [_policy_lr(params, 1.0, percent) for percent in range(101)]
    except OverflowError:
        factors = [math.inf]
    if all(abs(factor) <= MAX_GROWTH for factor in factors):
        return []
    return [f"{PARAM_LABELS['gamma']} makes the learning rate grow past {MAX_GROWTH:g} times its base; "
            "choose one that keeps it in bounds."]


def _milestone_problems(milestones: Any) -> list[str]:
    label = PARAM_LABELS["milestones_percent"]
    if not isinstance(milestones, list | tuple) or not milestones:
        return [f"{label} must be a list of at least one percentage."]
    values = [_number(value) for value in milestones]
    if any(value is None for value in values):
        return [f"{label} must all be numbers."]
    problems = []
    if any(not 0 < value < 100 for value in values):
        problems.append(f"{label} must each be more than 0 and below 100.")
    if any(later <= earlier for earlier, later in zip(values, values[1:], strict=False)):
        problems.append(f"{label} must be in increasing order, each larger than the one before.")
    return problems


def parse_milestones(text: str) -> list[float]:
    """The form's milestones field ("50, 75") as a list of floats; ValueError with a message."""
    values = []
    for item in re.split(r"[,;\s]+", text.strip()):
        if not item:
            continue
        try:
            value = float(item.rstrip("%"))
        except ValueError:
            raise ValueError(f"{item[:20]!r} is not a number; write milestones as percentages like 50, 75") from None
        if not math.isfinite(value):
            raise ValueError(f"{item[:20]!r} is not a finite number; write milestones as percentages like 50, 75")
        values.append(value)
    return values


def _percent(value: float) -> str:
    return f"{float(value):g}%"


def describe(policy: Mapping[str, Any], base_lr: float) -> str:
    """One line that says what the policy does, e.g. "step: 0.01, ×0.1 every 33% of training, warmup 5%"."""
    params = resolve(policy)
    name = params["name"]
    base = f"{float(base_lr):g}"
    if name == "fixed":
        text = f"fixed: {base} throughout"
    elif name == "step":
        text = f"step: {base}, ×{params['gamma']:g} every {_percent(params['step_percent'])} of training"
    elif name == "multistep":
        at = ", ".join(_percent(value) for value in params["milestones_percent"])
        text = f"multistep: {base}, ×{params['gamma']:g} at {at} of training"
    elif name == "exp":
        text = f"exp: {base}, ×{params['gamma']:g} per 1% of training"
    elif name == "inv":
        text = f"inv: {base} × (1 + {params['gamma']:g}·p)^-{params['power']:g}, p in % of training"
    elif name == "poly":
        text = f"poly: {base} × (1 - progress)^{params['power']:g}, down to 0"
    elif name == "sigmoid":
        text = f"sigmoid: {base}, halved at {_percent(params['step_percent'])} of training, gamma {params['gamma']:g}"
    elif name == "cosine":
        text = f"cosine: {base} down to 0 along a half cosine"
    elif name == "linear":
        start, end = float(base_lr) * float(params["start_factor"]), float(base_lr) * float(params["end_factor"])
        return (f"linear: {start:g} up to {base} at {_percent(params['peak_percent'])} of training, "
                f"then down to {end:g} at the end")
    else:
        start = float(base_lr) / ONECYCLE_START_DIVISOR
        end = float(base_lr) / ONECYCLE_END_DIVISOR
        return (
            f"onecycle: {start:g} up to {base} over {_percent(ONECYCLE_PEAK_PERCENT)} of training, "
            f"then cosine down to {end:g}"
        )
    warmup = float(params.get("warmup_percent") or 0.0)
    return f"{text}, warmup {_percent(warmup)}" if warmup > 0 else text


def batch_size_at(batch_schedule: Iterable[Iterable[int]] | None, base_batch: int, epoch: float) -> int:
    """The per-device batch size in force at ``epoch`` (0-based: epochs completed so far).

    ``batch_schedule`` holds [epoch, batch size] pairs: from that epoch on, that
    batch size; before the first pair, ``base_batch``.
    """
    size = base_batch
    for start, batch in sorted((int(start), int(batch)) for start, batch in batch_schedule or []):
        if epoch >= start:
            size = batch
    return size


def parse_batch_schedule(text: str) -> list[list[int]]:
    """The form's "epoch:batch" list ("10:128, 20:256") as sorted [epoch, batch] pairs.

    Empty text is no schedule. Raises ValueError with a message for the user.
    """
    schedule: list[list[int]] = []
    for item in re.split(r"[,;\n]+", text):
        item = item.strip()
        if not item:
            continue
        match = re.fullmatch(r"(\d+)\s*:\s*(\d+)", item)
        if match is None:
            raise ValueError(f"{item!r} is not epoch:batch size; write pairs of whole numbers like 10:128, 20:256")
        epoch, batch = int(match.group(1)), int(match.group(2))
        if batch < 1:
            raise ValueError(f"the batch size in {item!r} must be at least 1")
        schedule.append([epoch, batch])
    schedule.sort()
    for (earlier, _), (later, _) in zip(schedule, schedule[1:], strict=False):
        if earlier == later:
            raise ValueError(f"epoch {later} appears twice in the batch size schedule")
    return schedule
