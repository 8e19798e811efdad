"""The run options only some tasks' models take (``trainer.tasks.runoptions``,
declared in ``base.RUN_OPTIONS``): what each is, the values it takes, and
which tasks take it."""

from __future__ import annotations

import math

import pytest

from trainer import tasks
from trainer.targets import ClassLabels
from trainer.tasks.base import RUN_OPTIONS
from trainer.tasks.runoptions import RunOption

DETECTION, CLASSIFICATION = tasks.TASKS["detection"], tasks.TASKS["classification"]
THRESHOLD = RUN_OPTIONS["score_threshold"]


def test_the_score_threshold_is_a_number_from_0_to_1_and_0_5_unless_chosen():
    assert (THRESHOLD.label, THRESHOLD.default, THRESHOLD.kind, THRESHOLD.minimum, THRESHOLD.maximum) == (
        "Score threshold", 0.5, float, 0.0, 1.0)
    assert "precision and recall" in THRESHOLD.help_text.lower()
    assert [THRESHOLD.check(value) for value in (0, 0.25, 1)] == [0.0, 0.25, 1.0]
    for wrong in (-0.01, 1.01, "0.3", True, None, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"^The score threshold is a number from 0 to 1\.$"):
            THRESHOLD.check(wrong)


def test_detection_models_take_the_score_threshold_and_classifiers_refuse_it():
    assert DETECTION.run_options == ("score_threshold",) and CLASSIFICATION.run_options == ()
    assert DETECTION.run_option({}, "score_threshold") == DETECTION.run_option({"score_threshold": None},
                                                                                "score_threshold") == 0.5
    assert DETECTION.run_option({"score_threshold": 0.3}, "score_threshold") == 0.3
    assert DETECTION.refused({"score_threshold": 0.3}) == {}
    assert CLASSIFICATION.refused({"score_threshold": 0.3}) == {
        "score_threshold": "the score threshold is an option of other tasks' models"}
    assert CLASSIFICATION.refused({"score_threshold": None}) == {}
    with pytest.raises(ValueError, match="A classification model takes no run option 'score_threshold'"):
        CLASSIFICATION.run_option({}, "score_threshold")


def test_a_task_naming_an_undeclared_run_option_fails_at_registration():
    with pytest.raises(ValueError, match="The task “odd” names unknown run options \\(loss\\)"):
        tasks.Task("odd", "Odd", metrics=(tasks.Metric("score", "score"),), metrics_title="score",
                   targets=ClassLabels(), training="", plan="", run_options=("loss",))


def test_a_whole_number_option_takes_whole_numbers_within_its_range():
    ignored = RunOption("ignore_value", "Ignore value", "Pixels of this value count for nothing.", default=255,
                        kind=int, minimum=0, maximum=255)
    assert ignored.check(3) == 3 and ignored.check(4.0) == 4 and isinstance(ignored.check(4.0), int)
    for wrong in (2.5, 256, -1):
        with pytest.raises(ValueError, match=r"^The ignore value is a whole number from 0 to 255\.$"):
            ignored.check(wrong)
    assert RunOption("weight", "Class weight", "", default=1.0, minimum=0.0).expects == (
        "The class weight is a number of at least 0.")


def test_a_choice_option_takes_one_of_its_values():
    loss = RunOption("loss", "Loss", "What the masks are scored by.", default="cross_entropy", kind=str,
                     choices=(("cross_entropy", "cross-entropy"), ("dice", "Dice")))
    assert loss.check("dice") == "dice" and loss.value_in({}) == "cross_entropy"
    with pytest.raises(ValueError, match=r"^The loss is one of: cross_entropy, dice\.$"):
        loss.value_in({"loss": "focal"})


def test_a_declaration_whose_default_it_refuses_fails():
    with pytest.raises(ValueError, match=r"^The score threshold is a number from 0 to 1\.$"):
        RunOption("score_threshold", "Score threshold", "", default=2.0, minimum=0.0, maximum=1.0)
    with pytest.raises(ValueError, match="is a float or an int, or a str with choices"):
        RunOption("loss", "Loss", "", default="dice", kind=str)
