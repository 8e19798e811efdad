"""The form fields every kind's create form shares, and the edit form."""

from __future__ import annotations

from typing import Any

from django import forms

from .models import Job


class TextField(forms.CharField):
    """A CharField that takes text only: from a JSON body a list, an object,
    a number or a boolean would otherwise become its Python text ("[None, None]")."""

    def to_python(self, value: Any) -> str:
        if value is not None and not isinstance(value, str):
            what = ("array" if isinstance(value, list) else "object" if isinstance(value, dict)
                    else "true or false" if isinstance(value, bool) else "number")
            raise forms.ValidationError(f"Give text here, not a JSON {what}.", code="not_text")
        return super().to_python(value)


class JobFieldsForm(forms.Form):
    """The fields every job has."""

    name = TextField(max_length=200)
    group = TextField(max_length=200, required=False,
                      help_text="Your jobs with the same group are listed together (each user's groups are their own).")
    notes = TextField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class DevicesField(forms.Form):
    """Which devices a job asks for: CPU, the next N free GPUs, or given GPUs."""

    device = forms.ChoiceField(choices=[("cpu", "CPU"), ("gpu", "GPU")], initial="cpu", required=False)
    gpu_count = forms.IntegerField(min_value=1, max_value=64, initial=1, required=False, label="Number of GPUs")
    gpu_ids = forms.CharField(required=False, label="Specific GPUs",
                              help_text="Comma-separated indices, e.g. 0,2. Leave empty for the next free ones.")

    def clean_gpu_ids(self) -> list[int]:
        raw = self.cleaned_data.get("gpu_ids") or ""
        try:
            ids = sorted({int(part) for part in raw.split(",") if part.strip()})
        except ValueError:
            raise forms.ValidationError("List GPU indices as numbers separated by commas, e.g. 0,2.") from None
        if any(i < 0 for i in ids):
            raise forms.ValidationError("GPU indices start at 0.")
        return ids

    def resources(self) -> dict[str, Any]:
        data = self.cleaned_data
        if data["device"] in ("", "cpu"):
            return {"device": "cpu", "count": 1}
        if data["gpu_ids"]:
            return {"device": "gpu", "ids": data["gpu_ids"]}
        return {"device": "gpu", "count": data.get("gpu_count") or 1}


class JobEditForm(forms.ModelForm):
    class Meta:
        model = Job
        fields = ["name", "group", "notes"]
        widgets = {"notes": forms.Textarea(attrs={"rows": 3})}
