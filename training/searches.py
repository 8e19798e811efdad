"""Adaptive hyperparameter searches: Optuna asks for a trial's settings, an
ordinary model job in the search's group trains it, each of its validations
is told to the study as it lands, and the pruner may stop it at a rung.

Optuna's ask-and-tell leaves the running of trials to us, and its
heartbeats do not cover it: ``advance`` is what keeps a study true to the
jobs. Every worker calls ``advance_all`` at each heartbeat
(``jobs.periodic``); a search is advanced by one worker at a time (a claim,
``Search.advancing_until``), and everything it needs is in the database
(the search, its trials and Optuna's tables) and the jobs' folders, so a
web or worker restart loses nothing. For each search it:

1. tells the study each running trial's new validations (the search's
   metric, one step a validation) and asks the pruner; a trial to prune
   is aborted (it keeps its snapshots and best weights, and can be resumed)
   and recorded "Stopped early" at its rung;
2. tells the study how each trial whose job ended did: complete with its
   best value; failed when its job failed, was aborted by a user, was
   deleted, or ended without validating;
3. asks for new trials while fewer than ``parallel`` run and fewer than
   ``trials`` were made.
"""

from __future__ import annotations

import contextlib
import logging
import math
import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import User
from django.db.models import Count, F, Q, Value
from django.db.models.functions import Concat
from django.urls import reverse
from django.utils import timezone

from jobs import groups, services
from jobs.models import Job, Status
from trainer.tasks import UnknownTask, task_of
from web.api import ActionError

from . import searchstudy, series
from .compare import legend
from .modeljobs import MODEL_KIND
from .models import Search, Trial

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

CLAIM_SECONDS = 60
MAX_TRIALS = 500


def _validations(job: Job, metric: str) -> list[tuple[float, float]]:
    """(epoch, value) of each of the job's validations, in order."""
    def read(run: series.Run) -> list[tuple[float, float]]:
        found = run.series.get(metric)
        return [] if found is None else list(zip(found.epochs, found.values, strict=True))

    return series.view(job.folder, read)


def _trial_params(search: Search, drawn: dict[str, Any]) -> dict[str, Any]:
    params = dict(search.base)
    for name, value in drawn.items():
        params[name] = {"source": "standard", "name": value} if name == "network" else value
    return params


def trial_label(drawn: dict[str, Any]) -> str:
    shown = {name: (f"{value:.3g}" if isinstance(value, float) else value) for name, value in drawn.items()}
    return legend(shown, list(shown))


def _trial_id(study: optuna.Study, number: int) -> int:
    storage = study._storage  # noqa: SLF001 - Optuna's ask-and-tell names trials by number, its storage by id
    return storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name), number)


def _report(search: Search, study: optuna.Study, trial: Trial) -> bool:
    """Tell the study the trial's new validations; True when the pruner stops it."""
    optuna = searchstudy.imported()
    values = _validations(trial.job, search.metric)
    if len(values) <= trial.reported:
        return False
    running = optuna.trial.Trial(study, _trial_id(study, trial.number))
    for step, (_epoch, value) in enumerate(values[trial.reported:], start=trial.reported + 1):
        if math.isfinite(value):
            running.report(value, step)
    Trial.objects.filter(pk=trial.pk).update(reported=len(values))
    trial.reported = len(values)
    if trial.job.status != Status.RUNNING or not running.should_prune():
        return False
    epoch, value = values[-1]
    message = (f"Stopped early by the search at validation {len(values)} (epoch {epoch:g}): "
               f"{search.metric} {value:.4g}, among the weaker trials at that rung")
    study.tell(trial.number, state=optuna.trial.TrialState.PRUNED)
    Trial.objects.filter(pk=trial.pk).update(state=Trial.State.PRUNED, rung=epoch, value=_best(search, values),
                                             message=message)
    Job.objects.filter(pk=trial.job.pk).update(notes=Concat(F("notes"), Value(f"\n{message}.")))
    with contextlib.suppress(ActionError):  # it ended meanwhile: stopped in the study, its run as it ended
        services.abort(trial.job, search.owner)
    return True


def _best(search: Search, values: list[tuple[float, float]]) -> float | None:
    finite = [value for _epoch, value in values if math.isfinite(value)]
    if not finite:
        return None
    return max(finite) if search.maximize else min(finite)


def _settle(search: Search, study: optuna.Study, trial: Trial) -> None:
    """Tell the study how a trial whose job ended (or went) did."""
    optuna = searchstudy.imported()
    job = trial.job
    if job is not None and job.status == Status.DONE:
        value = _best(search, _validations(job, search.metric))
        if value is not None:
            study.tell(trial.number, value)
            Trial.objects.filter(pk=trial.pk).update(state=Trial.State.COMPLETE, value=value)
            return
        message = f"Its run ended without a {search.metric} to judge it by."
    elif job is None:
        message = "Its job was deleted."
    else:
        message = f"Its job ended {job.get_status_display().lower()}: {job.error or 'aborted by a user'}"
    study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    Trial.objects.filter(pk=trial.pk).update(state=Trial.State.FAILED, message=message)


def _start_trials(search: Search, study: optuna.Study) -> None:
    optuna = searchstudy.imported()
    running = search.trial_set.filter(state=Trial.State.RUNNING).count()
    made = search.trial_set.count()
    spaces = searchstudy.distributions(search.space)
    while running < search.parallel and made < search.trials:
        asked = study.ask(spaces)
        drawn = dict(asked.params)
        label = trial_label(drawn)
        try:
            job = services.submit(search.owner, MODEL_KIND, f"{search.name} #{asked.number}: {label}",
                                  _trial_params(search, drawn), dict(search.resources), group=search.group,
                                  notes=f"Trial {asked.number} of the search “{search.name}”.",
                                  priority=search.priority)
        except ActionError as exc:  # over a quota or a limit: said on the search's page, tried again next time
            study.tell(asked.number, state=optuna.trial.TrialState.FAIL)
            Trial.objects.create(search=search, number=asked.number, params=drawn, state=Trial.State.FAILED,
                                 message=f"Could not be queued: {exc.message}")
            return
        Trial.objects.create(search=search, number=asked.number, job=job, params=drawn)
        running += 1
        made += 1


def _max_resource(search: Search) -> int:
    interval = float(search.base.get("val_interval") or 1)
    return max(1, math.ceil(float(search.base.get("epochs") or 1) / interval))


def advance(search: Search) -> None:
    """One pass over the search (see the module's docstring), if no one else is making one."""
    now = timezone.now()
    claimed = Search.objects.filter(pk=search.pk).filter(
        Q(advancing_until__isnull=True) | Q(advancing_until__lt=now)).update(
        advancing_until=now + timedelta(seconds=CLAIM_SECONDS))
    if not claimed:
        return
    try:
        study = searchstudy.load(search.study, search.sampler, search.pruner, _max_resource(search))
        for trial in search.trial_set.filter(state=Trial.State.RUNNING).select_related("job"):
            if trial.job is not None and trial.job.status in (Status.QUEUED, Status.WAITING):
                continue
            if trial.job is not None and trial.job.status == Status.RUNNING:
                _report(search, study, trial)
                continue
            if trial.job is not None:
                _report(search, study, trial)  # the validations it made before it ended
            _settle(search, study, trial)
        _start_trials(search, study)
    finally:
        Search.objects.filter(pk=search.pk).update(advancing_until=None)


def active() -> Any:
    """The searches with a trial running or trials still to make."""
    return (Search.objects.annotate(made=Count("trial_set"),
                                    running=Count("trial_set", filter=Q(trial_set__state=Trial.State.RUNNING)))
            .filter(Q(running__gt=0) | Q(made__lt=F("trials"))).select_related("owner"))


def advance_all() -> None:
    for search in active():
        try:
            advance(search)
        except Exception:  # one search's trouble (its study gone, a bad row) must not stop the others
            log.exception("search %s could not be advanced", search.pk)


def create(owner: User, name: str, group: str, base: dict[str, Any], resources: dict[str, Any], space: dict[str, Any],
           sampler: str, pruner: str, metric: str, trials: int, parallel: int, priority: str) -> Search:
    """Make the study, then the search (which the workers then see and
    advance: the study is there before they look), and start its first trials."""
    study = f"search-{uuid.uuid4().hex}"
    searchstudy.create(study, metric != "val_loss")
    search = Search.objects.create(owner=owner, name=name, group=group, base=base, resources=resources, space=space,
                                   sampler=sampler, pruner=pruner, metric=metric, trials=trials, parallel=parallel,
                                   priority=priority, study=study)
    advance(search)
    return search


def add_trials(search: Search, user: User, count: int) -> Search:
    """Continue a search with ``count`` more trials."""
    if user != search.owner and not user.is_staff:
        raise ActionError("Only the search's owner or staff may continue it.", status=403)
    if search.trials + count > MAX_TRIALS:
        raise ActionError(f"A search has at most {MAX_TRIALS} trials; it has {search.trials}.", status=400)
    Search.objects.filter(pk=search.pk).update(trials=F("trials") + count)
    search.refresh_from_db()
    advance(search)
    return search


def metric_label(search: Search) -> str:
    if search.metric == "val_loss":
        return "validation loss"
    try:
        task = task_of(search.base)
    except UnknownTask:
        return search.metric
    return next((f"validation {m.label}" for m in task.metrics if m.series == search.metric), search.metric)


def _trial_row(search: Search, trial: Trial) -> dict[str, Any]:
    job = trial.job
    values = _validations(job, search.metric) if job is not None else []
    return {
        "number": trial.number, "params": trial.params, "label": trial_label(trial.params),
        "state": trial.state, "state_label": trial.get_state_display(), "value": trial.value,
        "rung": trial.rung, "message": trial.message,
        "job": None if job is None else {"id": job.pk, "name": job.name, "status": job.status,
                                         "url": reverse("job", args=[job.pk]),
                                         "finished_at": job.finished_at.isoformat() if job.finished_at else None},
        "values": [[epoch, value] for epoch, value in values],
    }


def search_data(search: Search) -> dict[str, Any]:
    """The search as its page and the API show it."""
    trials = [_trial_row(search, trial) for trial in search.trial_set.select_related("job")]
    scored = [row for row in trials if row["value"] is not None and row["state"] == Trial.State.COMPLETE]
    best = (max if search.maximize else min)(scored, key=lambda row: row["value"]) if scored else None
    study = searchstudy.load(search.study, search.sampler, search.pruner, _max_resource(search))
    counts = {state: sum(1 for row in trials if row["state"] == state) for state in Trial.State.values}
    group_url = groups.page_url(search.owner.username, search.group)
    return {
        "id": search.pk, "name": search.name, "owner": search.owner.username, "group": search.group,
        "url": reverse("search", args=[search.pk]), "api": reverse("api-search", args=[search.pk]),
        "group_url": group_url, "compare_url": f"{reverse('compare')}?group={search.owner.username}/{search.group}",
        "metric": search.metric, "metric_label": metric_label(search), "maximize": search.maximize,
        "sampler": search.sampler, "sampler_label": searchstudy.SAMPLERS.get(search.sampler, search.sampler),
        "pruner": search.pruner, "pruner_label": searchstudy.PRUNERS.get(search.pruner, search.pruner),
        "space": search.space, "trials_wanted": search.trials, "parallel": search.parallel,
        "counts": counts, "active": counts[Trial.State.RUNNING] > 0 or len(trials) < search.trials,
        "best": best, "importances": searchstudy.importances(study), "trials": trials,
    }
