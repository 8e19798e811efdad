from __future__ import annotations

from django import forms
from django.contrib.auth.models import User

from jobs import services
from jobs.forms import DevicesField, JobFieldsForm
from jobs.models import Job
from web.numberfield import NumberField


class DeviceCheckForm(JobFieldsForm, DevicesField):
    """The page's form, and ``POST /api/jobs`` with ``"kind": "devicecheck"``."""

    seconds = NumberField(min_value=0.5, max_value=3600, initial=10, label="Duration (s)")
    size = forms.IntegerField(min_value=16, max_value=16384, initial=2048, label="Matrix size",
                              help_text="Side of the square matrices multiplied.")

    def submit(self, owner: User) -> Job:
        data = self.cleaned_data
        params = {"seconds": data["seconds"], "size": data["size"]}
        return services.submit(owner, "devicecheck", data["name"], params, self.resources(),
                               group=data["group"], notes=data["notes"], priority=self.chosen_priority())
