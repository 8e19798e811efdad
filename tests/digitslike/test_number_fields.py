"""A JSON ``true`` or ``false`` sent for a number is refused, in every form
the pages and the API take, as any other value that is not a number: a
score threshold of ``true`` was stored as 1.0."""

from __future__ import annotations

import pytest
from django import forms
from django.core.exceptions import ValidationError
from django.urls import get_resolver

from web.numberfield import NumberField


def every_form() -> list[type[forms.BaseForm]]:
    """Every form class of the project's apps, their modules imported
    through the URL configuration."""
    get_resolver().url_patterns  # noqa: B018 -- imports every view, and so every form
    found, pending = [], [forms.BaseForm]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            if not subclass.__module__.startswith("django."):
                found.append(subclass)
    return found


def fraction_fields() -> list[tuple[str, forms.Field]]:
    return [(f"{form.__module__}.{form.__name__}.{name}", field) for form in every_form()
            for name, field in form.base_fields.items() if isinstance(field, forms.FloatField)]


def test_the_forms_have_fraction_fields_and_each_is_a_number_field():
    found = fraction_fields()
    names = {name.rsplit(".", 1)[1] for name, _ in found}
    assert {"momentum", "score_threshold", "val_percent", "seconds", "min_box_size"} <= names, names
    assert [name for name, field in found if not isinstance(field, NumberField)] == []


@pytest.mark.parametrize("given", [True, False])
def test_a_number_field_refuses_true_and_false_and_takes_numbers(given):
    field = NumberField(required=False, min_value=0, max_value=1)
    with pytest.raises(ValidationError, match="Enter a number"):
        field.clean(given)
    assert field.clean(1) == 1.0 and field.clean("0.25") == 0.25 and field.clean(None) is None
