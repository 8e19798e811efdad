"""Pages for jobs. Each view checks permission, makes one call, then renders
or redirects; the rules live in ``services``."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db.models import prefetch_related_objects
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from trainer import jobfiles
from trainer.tasks import UnknownTask
from web.api import ActionError, error, whole_number

from . import bus, eventseek, feeds, kinds, resources, serialize, services, sharing, sse, streamslots
from .forms import DeviceLimitForm, JobEditForm, QueuePlaceForm
from .logfile import tail_lines
from .models import Job, Priority

MAX_SEQ = 2**63 - 1
"""The largest event ``seq`` a stream takes from Last-Event-ID; anything else starts from the first event."""

LOG_TAIL_LINES = 200


def _stream_position() -> str | None:
    """Where the shared stream ends now, so the page's stream starts there."""
    try:
        last = bus.client().xrevrange(bus.jobs_stream(), count=1)
    except bus.redis.RedisError:
        return None
    return last[0][0].decode() if last else "0-0"


def _tabs() -> list[dict]:
    """One tab per registered category, in order, with the jobs of its kinds
    and the count of those it counts."""
    tabs = []
    for category in kinds.categories():
        jobs = serialize.job_summaries(services.filtered_jobs({"category": category.name}))
        tabs.append({"id": category.name, "label": category.label, "group_link": category.group_link,
                     "counted": list(category.counted), "jobs": jobs,
                     "count": sum(category.counts(job["kind"]) for job in jobs)})
    return tabs


def _new_pages() -> list[dict]:
    return [{"label": f"New {kind.label.lower()}", "url": reverse(kind.new_page)}
            for kind in kinds.all_kinds() if kind.new_page]


@login_required
def home(request: HttpRequest) -> HttpResponse:
    tabs = _tabs()
    active = request.GET.get("tab") or next((t["id"] for t in tabs if t["jobs"]), tabs[0]["id"] if tabs else "")
    return render(request, "jobs/home.html", {"tabs": tabs, "active_tab": active, "new_pages": _new_pages(),
                                              "sparklines": kinds.sparklines(), "since": _stream_position()})


@login_required
def job_page(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job.objects.select_related("owner"), pk=job_id)
    # The page's stream starts after the file's last event, found from its
    # end, so a long job's page opens as fast as a new one's. The job is read
    # again after that: a state it reached meanwhile is then on the page (its
    # event comes again on the stream, harmlessly), never only in the part of
    # the file the stream skips.
    since = eventseek.last_seq(job.folder)
    job.refresh_from_db()
    # The page reads the transitions five times over (history, spans, times): once from the database.
    prefetch_related_objects([job], "transitions")
    context = {
        "job": job,
        "detail": serialize.job_detail(job),
        "can_change": job.can_change(request.user),
        "retry": services.retried_by_clone(job) and not job.lost_dependencies,
        "log_lines": tail_lines(job.folder / jobfiles.LOG, LOG_TAIL_LINES),
        "since": since,
        # The status history from the database: a state recorded there whose
        # event the stream then brings (the database may be a step ahead of
        # the file) carries its transition's id, and the page skips it.
        "status_history": job.history(),
        "edit_form": JobEditForm(instance=job),
        "priority_choices": [(value, label) for value, label in Priority.choices
                             if value != Priority.HIGH or request.user.is_staff],
        "settings_table": kinds.settings_table(job),
        "settings_json": kinds.public_params(job),
    }
    kind = kinds.get(job.kind)
    if kind.page_template:
        try:
            context.update(kind.page_context(job) if kind.page_context else {})
            context["kind_template"] = kind.page_template
        except UnknownTask as exc:  # the job is still shown, to be renamed or deleted
            context["kind_refused"] = str(exc)
    return render(request, "jobs/job.html", context)


@login_required
def resources_page(request: HttpRequest, status: int = 200) -> HttpResponse:
    return render(request, "jobs/resources.html", {"snapshot": resources.snapshot(),
                                                   "default_limit": settings.DEVICE_LIMIT_PER_USER}, status=status)


def _form_problems(form) -> str:
    return "; ".join(" ".join(v) if k == "__all__" else f"{k}: {' '.join(v)}" for k, v in form.errors.items())


@login_required
@require_POST
def queue_place(request: HttpRequest, job_id: int) -> HttpResponse:
    """The job page's priority form, and the Resources page's priority and
    Move to front (staff); each goes back to the page it came from."""
    job = get_object_or_404(Job, pk=job_id)
    from_resources = request.POST.get("back") == "resources"
    form = QueuePlaceForm(request.POST)
    try:
        if not form.is_valid():
            raise ActionError(f"Not changed: {_form_problems(form)}", status=400)
        sharing.change_place(job, request.user, form.cleaned_data["priority"], form.cleaned_data["front"])
    except ActionError as exc:
        if from_resources:
            messages.error(request, exc.message)
            return resources_page(request, status=exc.status)
        return _refused(request, job_id, exc)
    done = "moved to the front" if form.cleaned_data["front"] else f"priority {job.get_priority_display().lower()}"
    messages.success(request, f"“{job.name}”: {done}.")
    return redirect("resources") if from_resources else redirect("job", job_id)


@login_required
@require_POST
def device_limit(request: HttpRequest) -> HttpResponse:
    """Staff set how many devices a user may hold at once, on the Resources page."""
    form = DeviceLimitForm(request.POST)
    try:
        target = User.objects.filter(username=request.POST.get("username", "")).first()
        if target is None:
            raise ActionError(f"There is no user “{request.POST.get('username', '')}”.", status=404)
        if not form.is_valid():
            raise ActionError(f"Not saved: {_form_problems(form)}", status=400)
        sharing.set_limit(request.user, target, form.cleaned_data["limit"])
    except ActionError as exc:
        messages.error(request, exc.message)
        return resources_page(request, status=exc.status)
    limit = sharing.limit_of(target)
    messages.success(request, f"{target.username} may now hold {limit or 'any number of'} devices of a kind at once.")
    return redirect("resources")


def _refused(request: HttpRequest, job_id: int, exc: ActionError) -> HttpResponse:
    """Show the job page again with the reason, under the refusal's status code
    (403 for someone else's job, 409 for an action that does not fit its state)."""
    messages.error(request, exc.message)
    response = job_page(request, job_id)
    response.status_code = exc.status
    return response


def _act(request: HttpRequest, job_id: int, action, done: str) -> HttpResponse:
    job = get_object_or_404(Job, pk=job_id)
    try:
        result = action(job, request.user)
    except ActionError as exc:
        return _refused(request, job_id, exc)
    messages.success(request, done)
    return redirect("job", result.pk) if isinstance(result, Job) else redirect("job", job.pk)


@login_required
@require_POST
def abort(request: HttpRequest, job_id: int) -> HttpResponse:
    return _act(request, job_id, services.abort, "Abort requested.")


@login_required
@require_POST
def restart(request: HttpRequest, job_id: int) -> HttpResponse:
    return _act(request, job_id, services.restart, "Restart requested: its process is being killed.")


@login_required
@require_POST
def clone(request: HttpRequest, job_id: int) -> HttpResponse:
    return _act(request, job_id, services.clone, "Cloned as a new job of yours.")


@login_required
@require_POST
def resume(request: HttpRequest, job_id: int) -> HttpResponse:
    return _act(request, job_id, services.resume, "Resumed: queued again, to carry on from what its last run left.")


@login_required
@require_POST
def delete(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=job_id)
    try:
        services.delete(job, request.user)
    except ActionError as exc:
        return _refused(request, job_id, exc)
    messages.success(request, f"Deleted “{job.name}”.")
    return redirect("home")


@login_required
@require_POST
def edit(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job, pk=job_id)
    form = JobEditForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
        return _refused(request, job_id, ActionError(f"Not saved: {problems}", status=400))
    try:
        services.update(job, request.user, form.cleaned_data)
    except ActionError as exc:
        return _refused(request, job_id, exc)
    messages.success(request, "Saved.")
    return redirect("job", job_id)


async def job_events(request: HttpRequest, job_id: int) -> HttpResponse:
    if refused := await sse.signed_in(request):
        return refused
    job = await Job.objects.filter(pk=job_id).afirst()
    if job is None:
        return error("No such job.", 404)
    last = request.headers.get("Last-Event-ID") or request.GET.get("since") or "0"
    after = whole_number(last, MAX_SEQ) or 0
    return await _stream(request, feeds.follow(job.pk, job.folder, after))


async def jobs_events(request: HttpRequest) -> HttpResponse:
    if refused := await sse.signed_in(request):
        return refused
    since = request.headers.get("Last-Event-ID") or request.GET.get("since") or None
    return await _stream(request, sse.jobs_events(since, detailed=request.GET.get("detail") == "resources"))


async def _stream(request: HttpRequest, stream) -> HttpResponse:
    """The stream, within the user's share of live streams (429 beyond it)."""
    user = await request.auser()
    slot = streamslots.take(user.pk, settings.SSE_STREAMS_PER_USER)
    if slot is None:
        return error(f"{user.username} has {settings.SSE_STREAMS_PER_USER} live event streams open, "
                     "the most a user may; close some pages.", 429)
    return sse.event_stream(streamslots.holding(slot, stream))
