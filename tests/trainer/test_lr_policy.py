"""Every learning rate policy checked against hand-computed values, warmup and
scaling, the form's validation messages, and batch size schedules."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.lr_policy import (
    DEFAULTS,
    PARAM_DEFAULTS,
    POLICIES,
    batch_size_at,
    curve,
    describe,
    effective_lr,
    lr_at,
    parse_batch_schedule,
    parse_milestones,
    resolve,
    validate,
    warmup_for,
    warmup_steps,
)

BASE = 0.1
GROW = "Gamma makes the learning rate grow past 1e+06 times its base; choose one that keeps it in bounds."
MILESTONES = "Milestones (% of training)"


@pytest.mark.parametrize(
    ("policy", "step", "total", "expected"),
    [
        ({"name": "fixed"}, 0, 100, 0.1),
        ({"name": "fixed"}, 99, 100, 0.1),
        ({"name": "step", "step_percent": 33.0, "gamma": 0.1}, 0, 100, 0.1),
        ({"name": "step", "step_percent": 33.0, "gamma": 0.1}, 32, 100, 0.1),
        ({"name": "step", "step_percent": 33.0, "gamma": 0.1}, 33, 100, 0.01),
        ({"name": "step", "step_percent": 33.0, "gamma": 0.1}, 66, 100, 0.001),
        ({"name": "step", "step_percent": 33.0, "gamma": 0.1}, 99, 100, 0.0001),
        ({"name": "step", "step_percent": 33.0, "gamma": 0.1}, 330, 1000, 0.01),
        ({"name": "step", "step_percent": 25.0, "gamma": 0.5}, 60, 120, 0.025),
        ({"name": "multistep", "milestones_percent": [50.0, 75.0], "gamma": 0.1}, 49, 100, 0.1),
        ({"name": "multistep", "milestones_percent": [50.0, 75.0], "gamma": 0.1}, 50, 100, 0.01),
        ({"name": "multistep", "milestones_percent": [50.0, 75.0], "gamma": 0.1}, 74, 100, 0.01),
        ({"name": "multistep", "milestones_percent": [50.0, 75.0], "gamma": 0.1}, 75, 100, 0.001),
        ({"name": "exp", "gamma": 0.95}, 10, 100, 0.1 * 0.95**10),
        ({"name": "exp", "gamma": 0.95}, 10, 200, 0.1 * 0.95**5),
        ({"name": "exp"}, 100, 100, 0.1 * 0.95**100),
        ({"name": "inv", "gamma": 0.1, "power": 0.75}, 10, 100, 0.1 * 2**-0.75),
        ({"name": "inv", "gamma": 0.1, "power": 0.75}, 30, 100, 0.1 * 4**-0.75),
        ({"name": "inv", "gamma": 1.0, "power": 1.0}, 1, 100, 0.05),
        ({"name": "poly", "power": 2.0}, 50, 100, 0.025),
        ({"name": "poly"}, 25, 100, 0.075),
        ({"name": "poly", "power": 1.0}, 100, 100, 0.0),
        ({"name": "sigmoid"}, 50, 100, 0.05),
        ({"name": "sigmoid", "gamma": -0.1, "step_percent": 50.0}, 0, 100, 0.1 / (1 + math.exp(-5))),
        ({"name": "sigmoid", "gamma": -0.1, "step_percent": 50.0}, 100, 100, 0.1 / (1 + math.exp(5))),
        ({"name": "sigmoid", "gamma": 0.2, "step_percent": 20.0}, 30, 100, 0.1 / (1 + math.exp(-2))),
        ({"name": "cosine"}, 0, 100, 0.1),
        ({"name": "cosine"}, 25, 100, 0.05 * (1 + math.sqrt(0.5))),
        ({"name": "cosine"}, 50, 100, 0.05),
        ({"name": "cosine"}, 100, 100, 0.0),
        ({"name": "onecycle"}, 0, 100, 0.004),
        ({"name": "onecycle"}, 15, 100, 0.052),
        ({"name": "onecycle"}, 30, 100, 0.1),
        ({"name": "onecycle"}, 65, 100, 1e-5 + 0.5 * (0.1 - 1e-5)),
        ({"name": "onecycle"}, 100, 100, 1e-5),
        ({"name": "onecycle", "warmup_percent": 50.0}, 0, 100, 0.004),
        ({"name": "linear"}, 0, 100, 0.02),
        ({"name": "linear"}, 10, 100, 0.1 * (0.2 + 0.8 * 10 / 23)),
        ({"name": "linear"}, 23, 100, 0.1),
        ({"name": "linear"}, 50, 100, 0.1 * (1 - 0.93 * 27 / 77)),
        ({"name": "linear"}, 100, 100, 0.007),
        ({"name": "linear", "start_factor": 0.0, "peak_percent": 50.0, "end_factor": 0.5}, 75, 100, 0.075),
    ],
)
def test_policies_match_hand_computed_values(policy, step, total, expected):
    assert lr_at(policy, BASE, step, total) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_steps_past_the_end_count_as_the_end():
    assert lr_at({"name": "cosine"}, BASE, 150, 100) == pytest.approx(0.0, abs=1e-15)


def test_extreme_sigmoid_does_not_overflow():
    assert lr_at({"name": "sigmoid", "gamma": -100.0, "step_percent": 0.0}, BASE, 100, 100) == 0.0


@pytest.mark.parametrize(
    ("step", "factor"),
    [(0, 0.1), (4, 0.5), (9, 1.0), (10, 1.0), (50, 1.0)],
)
def test_warmup_ramps_linearly_over_its_percentage(step, factor):
    policy = {"name": "fixed", "warmup_percent": 10.0}
    assert lr_at(policy, BASE, step, 100) == pytest.approx(BASE * factor)


def test_warmup_multiplies_the_policy_and_rounds_its_length_up():
    cosine = {"name": "cosine", "warmup_percent": 10.0}
    assert lr_at(cosine, BASE, 5, 100) == pytest.approx(0.05 * (1 + math.cos(math.pi * 0.05)) * 0.6)
    partial = {"name": "step", "step_percent": 50.0, "gamma": 0.1, "warmup_percent": 2.5}
    assert warmup_steps(partial, 100) == 3
    assert [lr_at(partial, BASE, step, 100) for step in range(4)] == pytest.approx([BASE / 3, BASE * 2 / 3, BASE, BASE])
    assert warmup_steps({"name": "fixed", "warmup_percent": 0.7}, 1000) == 7
    assert warmup_steps({"name": "fixed"}, 1000) == 0
    assert warmup_steps({"name": "onecycle", "warmup_percent": 10.0}, 1000) == 0


def test_lr_at_refuses_nonsense():
    with pytest.raises(ValueError, match="unknown learning rate policy 'bogus'"):
        lr_at({"name": "bogus"}, BASE, 0, 10)
    with pytest.raises(ValueError, match="total_steps"):
        lr_at({"name": "fixed"}, BASE, 0, 0)
    with pytest.raises(ValueError, match="step"):
        lr_at({"name": "fixed"}, BASE, -1, 10)


def test_resolve_fills_defaults_and_drops_unused_parameters():
    form = {"name": "exp", **PARAM_DEFAULTS, "gamma": None}
    assert resolve(form) == {"name": "exp", "gamma": 0.95, "warmup_percent": 0.0}
    assert resolve({"name": "onecycle", **PARAM_DEFAULTS}) == {"name": "onecycle"}


def test_policies_defaults_and_parameters_agree():
    assert [name for name, _label, _params in POLICIES] == list(DEFAULTS)
    for name, label, params in POLICIES:
        assert label
        assert sorted(params) == sorted(DEFAULTS[name])
        assert validate({"name": name}) == []
        assert validate({"name": name, **PARAM_DEFAULTS}) == []
    assert validate({"name": "sigmoid"}) == [] and lr_at({"name": "sigmoid"}, 1.0, 90, 100) < 0.1


def test_curve_spans_the_training():
    points = curve({"name": "step"}, BASE, 1000)
    assert len(points) == 200
    assert points[0][0] == 0 and points[-1][0] == 999
    assert [step for step, _lr in points] == sorted({step for step, _lr in points})
    assert points[0][1] == BASE and points[-1][1] == pytest.approx(BASE * 0.1**3)
    assert [step for step, _lr in curve({"name": "fixed"}, BASE, 50)] == list(range(50))
    assert len(curve({"name": "fixed"}, BASE, 5000, points=37)) == 37
    with pytest.raises(ValueError):
        curve({"name": "fixed"}, BASE, 0)


@pytest.mark.parametrize("name", ["step", "multistep", "exp", "inv", "poly", "sigmoid", "cosine"])
def test_decaying_policies_never_increase(name):
    rates = [lr for _step, lr in curve({"name": name}, BASE, 777)]
    assert all(later <= earlier for earlier, later in zip(rates, rates[1:], strict=False))
    assert rates[-1] < rates[0]


def test_onecycle_rises_to_the_base_rate_at_thirty_percent_then_falls():
    rates = dict(curve({"name": "onecycle"}, BASE, 1000, points=1000))
    peak = max(rates, key=rates.get)
    assert peak == 300 and rates[peak] == pytest.approx(BASE)
    ordered = [rates[step] for step in sorted(rates)]
    assert all(b >= a for a, b in zip(ordered[:300], ordered[1:301], strict=False))
    assert all(b <= a for a, b in zip(ordered[300:], ordered[301:], strict=False))


def test_effective_lr_and_scaled_warmup():
    assert effective_lr(0.1, 1, True) == 0.1
    assert effective_lr(0.1, 4, True) == pytest.approx(0.4)
    assert effective_lr(0.1, 4, False) == 0.1
    step = {"name": "step", "step_percent": 33.0, "gamma": 0.1, "warmup_percent": 0.0}
    assert warmup_for(step, 1, True) == step
    assert warmup_for(step, 4, False) == step
    assert warmup_for(step, 4, True) == {**step, "warmup_percent": 5.0}
    assert step["warmup_percent"] == 0.0
    assert warmup_for({"name": "cosine"}, 4, True)["warmup_percent"] == 5.0
    assert warmup_for({**step, "warmup_percent": 12.0}, 4, True)["warmup_percent"] == 12.0
    assert warmup_for({"name": "onecycle"}, 4, True) == {"name": "onecycle"}
    assert warmup_for({"name": "linear"}, 4, True) == {"name": "linear"}, "it has its own ramp"


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("step", "The learning rate policy must be an object with a name."),
        ({"name": "bogus"}, "Unknown learning rate policy 'bogus'; choose one of fixed, step, multistep, exp, inv, poly, "
         "sigmoid, cosine, onecycle, linear."),
        ({"name": "step", "step_percent": 0}, "Step size (% of training) must be more than 0 and at most 100."),
        ({"name": "step", "step_percent": -5}, "Step size (% of training) must be more than 0 and at most 100."),
        ({"name": "step", "gamma": -0.1}, "Gamma must be more than 0."),
        ({"name": "step", "gamma": "x"}, "Gamma must be a number."),
        ({"name": "step", "gamma": True}, "Gamma must be a number."),
        ({"name": "exp", "gamma": float("nan")}, "Gamma must be a number."),
        ({"name": "exp", "gamma": 0}, "Gamma must be more than 0."),
        ({"name": "inv", "power": -1}, "Power must not be negative."),
        ({"name": "inv", "gamma": -1}, "Gamma must not be negative."),
        ({"name": "poly", "power": -0.5}, "Power must not be negative."),
        ({"name": "sigmoid", "step_percent": 120}, "Step size (% of training) must be between 0 and 100."),
        ({"name": "cosine", "warmup_percent": -1}, "Warmup (% of training) must be at least 0 and below 100."),
        ({"name": "fixed", "warmup_percent": 100}, "Warmup (% of training) must be at least 0 and below 100."),
        ({"name": "multistep", "milestones_percent": []}, MILESTONES + " must be a list of at least one percentage."),
        ({"name": "multistep", "milestones_percent": "50"}, MILESTONES + " must be a list of at least one percentage."),
        ({"name": "multistep", "milestones_percent": [50, "a"]}, MILESTONES + " must all be numbers."),
        ({"name": "multistep", "milestones_percent": [50, 120]}, MILESTONES + " must each be more than 0 and below 100."),
        ({"name": "multistep", "milestones_percent": [0, 50]}, MILESTONES + " must each be more than 0 and below 100."),
        ({"name": "multistep", "milestones_percent": [75, 50]},
         MILESTONES + " must be in increasing order, each larger than the one before."),
        ({"name": "multistep", "milestones_percent": [50, 50]},
         MILESTONES + " must be in increasing order, each larger than the one before."),
        ({"name": "step", "gamma": 1e308}, GROW),
        ({"name": "exp", "gamma": 1.5}, GROW),
        ({"name": "multistep", "gamma": 1e4}, GROW),
    ],
)
def test_validate_explains_each_problem(policy, message):
    assert validate(policy) == [message]


def test_validate_reports_every_problem_and_ignores_unused_parameters():
    problems = validate({"name": "step", "step_percent": 0, "gamma": -1, "warmup_percent": 200})
    assert len(problems) == 3
    assert validate({"name": "cosine", "gamma": -5, "step_percent": "junk", "milestones_percent": "junk"}) == []


def test_describe_says_what_the_policy_does():
    assert describe({"name": "step", "step_percent": 33.0, "gamma": 0.1, "warmup_percent": 5.0}, 0.01) == (
        "step: 0.01, ×0.1 every 33% of training, warmup 5%"
    )
    assert describe({"name": "multistep"}, 0.1) == "multistep: 0.1, ×0.1 at 50%, 75% of training"
    assert describe({"name": "onecycle", "warmup_percent": 5.0}, 0.1) == (
        "onecycle: 0.004 up to 0.1 over 30% of training, then cosine down to 1e-05"
    )
    assert describe({"name": "linear"}, 1.5) == (
        "linear: 0.3 up to 1.5 at 23% of training, then down to 0.105 at the end"
    )
    for name in DEFAULTS:
        line = describe({"name": name}, 0.1)
        assert line.startswith(f"{name}: ") and "\n" not in line


def test_parse_milestones():
    assert parse_milestones("50, 75") == [50.0, 75.0]
    assert parse_milestones(" 30%;60 90 ") == [30.0, 60.0, 90.0]
    assert parse_milestones("") == []
    with pytest.raises(ValueError, match="'half' is not a number"):
        parse_milestones("10, half")
    for unbounded in ("9" * 400, "1e999", "inf", "nan"):  # float() takes them all; a JSON column does not
        with pytest.raises(ValueError, match="is not a finite number"):
            parse_milestones(f"50, {unbounded}")


def test_batch_size_at_follows_the_schedule():
    schedule = [[10, 128], [20, 256]]
    assert [batch_size_at(schedule, 64, epoch) for epoch in (0, 9, 9.5, 10, 19, 20, 100)] == [64, 64, 64, 128, 128, 256, 256]
    assert batch_size_at([[20, 256], [10, 128]], 64, 15) == 128
    assert batch_size_at([], 64, 50) == 64
    assert batch_size_at(None, 32, 50) == 32


def test_parse_batch_schedule_reads_the_form():
    assert parse_batch_schedule("10:128, 20:256") == [[10, 128], [20, 256]]
    assert parse_batch_schedule(" 20 : 256;\n10:128, ") == [[10, 128], [20, 256]]
    assert parse_batch_schedule("") == [] and parse_batch_schedule("  \n") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("10-128", "'10-128' is not epoch:batch size"),
        ("10:abc", "'10:abc' is not epoch:batch size"),
        ("1.5:128", "'1.5:128' is not epoch:batch size"),
        ("-1:128", "'-1:128' is not epoch:batch size"),
        ("10:128:2", "'10:128:2' is not epoch:batch size"),
        ("10:0", "the batch size in '10:0' must be at least 1"),
        ("10:128, 10:256", "epoch 10 appears twice"),
    ],
)
def test_parse_batch_schedule_refuses_bad_text(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_batch_schedule(text)


def test_importing_it_loads_neither_torch_numpy_nor_django():
    code = "import sys, trainer.lr_policy; print(sorted({'torch', 'numpy', 'django'} & set(sys.modules)))"
    root = Path(__file__).parents[2]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert result.stdout.strip() == "[]"


def test_a_growing_rate_is_allowed_while_it_stays_in_bounds():
    assert validate({"name": "exp", "gamma": 1.1}) == []  # 1.1**100: about 13,781 times the base
    assert validate({"name": "step", "gamma": 10, "step_percent": 25}) == []  # 10**4 at the end
