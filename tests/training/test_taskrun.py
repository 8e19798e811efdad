"""The New model form's fields made from run option declarations
(``training.forms.taskrun``): blank for the default, the declaration's own
words for a value refused, whatever its kind."""

from __future__ import annotations

from django import forms

from trainer.tasks.runoptions import RunOption
from training.forms.taskrun import option_field

IGNORE = RunOption("ignore_value", "Ignore value", "Pixels of this value count for nothing.", default=255, kind=int,
                   minimum=0, maximum=255)
LOSS = RunOption("loss", "Loss", "What the masks are scored by.", default="cross_entropy", kind=str,
                 choices=(("cross_entropy", "cross-entropy"), ("dice", "Dice")))


def cleaned(option: RunOption, value: str) -> tuple[object, list[str]]:
    form = type("OptionForm", (forms.Form,), {option.name: option_field(option)})({option.name: value})
    form.is_valid()
    return form.cleaned_data.get(option.name), form.errors.get(option.name, [])


def test_a_whole_number_field_takes_whole_numbers_in_range_and_blank():
    assert cleaned(IGNORE, "7") == (7, []) and cleaned(IGNORE, "") == (None, [])
    for wrong in ("2.5", "256", "-1", "many"):
        assert cleaned(IGNORE, wrong) == (None, ["The ignore value is a whole number from 0 to 255."])
    assert option_field(IGNORE).help_text == "Pixels of this value count for nothing. Blank: 255."


def test_a_choice_field_takes_its_values_and_blank_and_names_the_default_by_its_label():
    assert cleaned(LOSS, "dice") == ("dice", []) and cleaned(LOSS, "") == (None, [])
    assert cleaned(LOSS, "focal") == (None, ["The loss is one of: cross_entropy, dice."])
    assert option_field(LOSS).help_text == "What the masks are scored by. Blank: cross-entropy."
