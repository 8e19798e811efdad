"""Job kinds for the tests, registered only when the test suite lists this
module in JOB_KINDS_MODULES, the way an app registers its own:

- ``sleep``: a quick kind for the integration tests, which sleeps in steps
  and reports progress, with no PyTorch import to wait for;
- ``probe``: a kind in a tab of its own that says all a kind can say for
  itself (a create form, a resume file, dependents, summary extras, a sparkline), so that
  ``tests/test_kinds.py`` shows a kind plugging in with no change in ``jobs/``;
  a probe with ``code`` in its params needs the run-code permission.
"""

from django import forms
from django.contrib.auth.models import User

from jobs import services
from jobs.forms import JobFieldsForm
from jobs.kinds import Category, JobKind, Sparkline, python_module, register, register_category
from jobs.models import Job

register(JobKind("sleep", "Sleep (tests)", "checks", python_module("tests.sleeper")))


class ProbeForm(JobFieldsForm):
    steps = forms.IntegerField(min_value=1, initial=3)

    def submit(self, owner: User) -> Job:
        data = self.cleaned_data
        return services.submit(owner, "probe", data["name"], {"steps": data["steps"], "step_seconds": 0.01},
                               {"device": "cpu", "count": 1}, group=data["group"], notes=data["notes"])


def probes_using(job: Job):
    return Job.objects.filter(params__probe=job.pk)


register_category(Category("probes", "Probes", order=90, group_link="probe the group"))
register(JobKind("probe", "Probe", "probes", python_module("tests.sleeper"), create_form=ProbeForm,
                 resume_file="probe.state", dependents=probes_using,
                 summary_extra=lambda job: {"probe_steps": job.params.get("steps")},
                 sparkline=Sparkline("probe line", lambda job: job.params.get("line", []), live_field="progress"),
                 required_permission=lambda params: "training.run_code" if params.get("code") else None))
