"""The form fields every kind's create form shares, and the edit form."""

from __future__ import annotations

from typing import Any

from django import forms

from .models import Job, Priority


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
    """Which devices a job asks for (CPU, the next N free GPUs, or given GPUs), and its priority."""

    device = forms.ChoiceField(choices=[("cpu", "CPU"), ("gpu", "GPU")], initial="cpu", required=False)
    gpu_count = forms.IntegerField(min_value=1, max_value=64, initial=1, required=False, label="Number of GPUs")
    gpu_ids = forms.CharField(required=False, label="Specific GPUs",
                              help_text="Comma-separated indices, e.g. 0,2. Leave empty for the next free ones.")

    priority = forms.ChoiceField(choices=Priority.choices, initial=Priority.NORMAL, required=False,
                                 help_text="Which waiting jobs get devices first: high (given by staff), normal, "
                                           "or low (waits while normal jobs wait).")

    def chosen_priority(self) -> str:
        return self.cleaned_data.get("priority") or Priority.NORMAL

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


class QueuePlaceForm(forms.Form):
    """A pending job's place in the queue: its priority, or (staff) to the front."""

    priority = forms.ChoiceField(choices=[("", "—"), *Priority.choices], required=False)
    front = forms.BooleanField(required=False, label="Move to the front")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("priority") and not data.get("front"):
            raise forms.ValidationError("Give a priority, or front: true to move the job to the front.")
        return data


class DeviceLimitForm(forms.Form):
    """How many devices of a class a user may hold at once; empty: the default."""

    limit = forms.IntegerField(min_value=0, max_value=4096, required=False,
                               help_text="0: no limit; empty: the default for every user.")
