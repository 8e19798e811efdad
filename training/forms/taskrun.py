"""The fields of the run options only some tasks' models take, one for each
of their declarations (``trainer.tasks.base.RUN_OPTIONS``): the page shows
each for those tasks alone, and ``taskfit`` refuses it for the others."""

from __future__ import annotations

from django import forms

from trainer.tasks.base import RUN_OPTIONS
from trainer.tasks.runoptions import RunOption
from web.numberfield import NumberField


def option_field(option: RunOption) -> forms.Field:
    """Its field: blank for the default, any value it refuses refused with
    the words the trainer would use (``RunOption.expects``)."""
    messages = dict.fromkeys(("invalid", "min_value", "max_value", "invalid_choice"), option.expects)
    shown = dict(option.choices).get(str(option.default), option.default)
    common = {"label": option.label, "help_text": f"{option.help_text} Blank: {shown}.", "required": False,
              "error_messages": messages}
    if option.choices:
        return forms.TypedChoiceField(choices=[("", "")] + list(option.choices), empty_value=None, **common)
    number = forms.IntegerField if option.kind is int else NumberField
    return number(min_value=option.minimum, max_value=option.maximum, **common)


TaskRunFields = type("TaskRunFields", (forms.Form,), {
    "__module__": __name__, "__doc__": "A field for each run option of ``RUN_OPTIONS``, blank unless chosen.",
    **{name: option_field(option) for name, option in RUN_OPTIONS.items()}})
