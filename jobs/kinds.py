"""The registry of job kinds: the one place where an app plugs a kind of
work into the job system. ``jobs/`` names no kind; everything it does
differently for one (the home-page tab, the create form or endpoint,
resuming, what depends on a job, what its summary, home-list row and page
add) it asks the
kind's ``JobKind`` here.

Apps register their categories and kinds when Django starts
(``AppConfig.ready``). ``JOB_KINDS_MODULES`` names extra modules to import
for their registrations (the test suite adds a quick sleeping kind this
way). Since those are imported before the later apps are ready, a kind may
name a category registered after it; the system check ``jobs.E001`` reports
a category that no app registered.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core import checks

from trainer import jobfiles

from .jobpaths import in_job_words

if TYPE_CHECKING:
    from django import forms

    from .models import Job


@dataclass(frozen=True)
class Category:
    """A tab of the home page, listing the jobs of the kinds that name it."""

    name: str
    label: str
    # Tabs are shown by increasing order.
    order: int
    # The text of a link from each group of this tab to the group's page
    # (empty: no link).
    group_link: str = ""
    # The kinds the tab's count counts (empty: all it lists): the Models tab
    # lists a model's exports with it, but counts models.
    counted: tuple[str, ...] = ()

    def counts(self, kind: str) -> bool:
        return not self.counted or kind in self.counted


SettingsGroup = tuple[str, list[tuple[str, str]]]


@dataclass(frozen=True)
class Sparkline:
    """A small line that the home list draws beside a job's progress bar:
    ``values(job)`` (a few dozen numbers) is the summary's ``sparkline``,
    and each progress event's ``live_field`` adds one as it comes."""

    # What the line shows, as its tooltip and its accessible name say it.
    label: str
    values: Callable[[Job], list[float]]
    live_field: str


@dataclass(frozen=True)
class JobKind:
    name: str
    label: str
    category: str
    # argv of the job's process; it runs with the job folder as working
    # directory and finds its settings in config.json there.
    command: Callable[[Job], list[str]]
    # What the job page adds for this kind: a template and its context.
    page_template: str = ""
    page_context: Callable[[Job], dict[str, Any]] | None = None
    # The URL name of the page that creates one; the home page links it as
    # "New <label>".
    new_page: str = ""
    # How the JSON API creates one: a form that ``POST /api/jobs`` fills with
    # the request and whose ``submit(owner)`` returns the new job, or the URL
    # name of the kind's own endpoint, which ``POST /api/jobs`` points to.
    create_form: type[forms.Form] | None = None
    create_endpoint: str = ""
    # The file, relative to the job folder, that an aborted or failed run
    # leaves to carry on from; empty for a kind that cannot resume.
    resume_file: str = ""
    # The jobs that use this one; deleting it tells each of them
    # (``Job.lost_dependencies``), and they can no longer run.
    dependents: Callable[[Job], Iterable[Job]] | None = None
    # The permission ("app_label.codename") a job of these params needs its
    # owner to hold, if any: checked when it is submitted, cloned or resumed
    # and again when a worker starts it, so revoking it stops the owner's
    # jobs that have not started yet.
    required_permission: Callable[[dict[str, Any]], str | None] | None = None
    # The trained model (a job id) whose network a job of these params
    # builds, if any: that network's code runs in this job, so its owner
    # needs the permission the model's code needs, unless a user holding it
    # vouched for the code (``permissions.network_refusal``).
    network_of: Callable[[dict[str, Any]], Any] | None = None
    # What the kind adds to a job's summary (the lists and the home page).
    summary_extra: Callable[[Job], dict[str, Any]] | None = None
    # The line a job's row on the home page draws, if any.
    sparkline: Sparkline | None = None
    # The job's settings as users may see them, in the API and on the page:
    # its params without server paths (default: the params, with paths into
    # job folders in the jobs' words; see ``without``).
    public_params: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # The job page's settings table: (group title, [(label, value)]) in the
    # order of the form that made the job (default: one row per parameter).
    settings: Callable[[Job], list[SettingsGroup]] | None = None
    # Work done once a job has ended (done, failed or aborted), by the
    # worker that ran it after its devices are free: e.g. a summary that
    # saves pages reading its whole output.
    ended: Callable[[Job], None] | None = None


_categories: dict[str, Category] = {}
_kinds: dict[str, JobKind] = {}


def register_category(category: Category) -> None:
    _categories[category.name] = category


def register(kind: JobKind) -> None:
    _kinds[kind.name] = kind


def get(name: str) -> JobKind:
    return _kinds[name]


def find(name: str) -> JobKind | None:
    """The kind of that name, or None for a kind no app registers (any more)."""
    return _kinds.get(name)


def all_kinds() -> list[JobKind]:
    """Every kind, in the order of their categories' tabs."""
    order = {name: position for position, name in enumerate(c.name for c in categories())}
    return sorted(_kinds.values(), key=lambda kind: order.get(kind.category, len(order)))


def without(*private: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``public_params`` that leaves out the named params (the server's
    business) and shows paths into job folders in the jobs' words."""
    def public(params: dict[str, Any]) -> dict[str, Any]:
        return in_job_words({k: v for k, v in params.items() if k not in private})
    return public


def public_params(job: Job) -> dict[str, Any]:
    kind = find(job.kind)
    return kind.public_params(job.params) if kind and kind.public_params else in_job_words(job.params)


def settings_table(job: Job) -> list[SettingsGroup]:
    kind = find(job.kind)
    if kind and kind.settings:
        return kind.settings(job)
    return [("Settings", [(name, json.dumps(value)) for name, value in public_params(job).items()])]


def sparklines() -> dict[str, dict[str, str]]:
    """What the home page needs to draw and extend each kind's sparkline, by kind."""
    return {kind.name: {"label": kind.sparkline.label, "live_field": kind.sparkline.live_field}
            for kind in _kinds.values() if kind.sparkline}


def categories() -> list[Category]:
    return sorted(_categories.values(), key=lambda category: category.order)


def names_in(category: str) -> list[str]:
    return [kind.name for kind in _kinds.values() if kind.category == category]


def python_module(module: str) -> Callable[[Job], list[str]]:
    """The command for a kind implemented as ``python -m module config.json``."""
    return lambda job: [sys.executable, "-m", module, jobfiles.CONFIG]


def check_categories(**kwargs: Any) -> list[checks.CheckMessage]:
    """The system check that every kind's category is registered."""
    return [
        checks.Error(f"Job kind {kind.name!r} names the category {kind.category!r}, which no app registers.",
                     hint="Register it with jobs.kinds.register_category in the app's AppConfig.ready.",
                     id="jobs.E001")
        for kind in _kinds.values() if kind.category not in _categories
    ]
