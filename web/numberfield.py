"""The form field for a number with a fraction, in every app's forms.

Django's ``FloatField`` takes Python's ``float()`` of what it is given, so
an API body's JSON ``true`` or ``false`` became 1 or 0 (a score threshold
of ``true`` was stored as 1.0). This one refuses them as any other value
that is not a number; ``IntegerField`` refuses them already."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError


class NumberField(forms.FloatField):
    def to_python(self, value: Any) -> float | None:
        if isinstance(value, bool):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)
