"""Fixtures shared by the suite: users, a real worker and a real web server
over the test database, and the suite's own Redis."""

from __future__ import annotations

import signal
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections

from tests import plugin
from tests.browser import CHROMIUM
from tests.processes import database_url, start_web, start_worker, wait_for
from tests.redisserver import free_port


@pytest.fixture
def db_url(transactional_db) -> str:
    """DATABASE_URL for subprocesses: the test database, committed data only."""
    return database_url(connection.settings_dict)


@pytest.fixture
def log_dir(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


@pytest.fixture
def worker_factory(db_url, log_dir):
    """Start workers on demand; each registers itself before it is returned."""
    from jobs.models import Worker

    started = []

    def start(name: str = "worker", **env: str):
        before = set(Worker.objects.values_list("id", flat=True))
        service = start_worker(db_url, log_dir, name, **env)
        started.append(service)

        def registered():
            if service.process.poll() is not None:
                raise AssertionError(f"the worker exited:\n{service.output()}")
            return set(Worker.objects.values_list("id", flat=True)) - before

        service.worker_id = wait_for(registered, timeout=60, what="the worker to register").pop()
        return service

    yield start
    for service in started:
        service.stop()


@pytest.fixture
def worker(worker_factory):
    return worker_factory()


@pytest.fixture
def web(db_url, log_dir):
    port = free_port()
    service = start_web(db_url, port, log_dir)
    service.url = f"http://127.0.0.1:{port}"
    yield service
    service.stop()


@pytest.fixture
def redis_server():
    return plugin.REDIS


@pytest.fixture
def alice(db):
    return User.objects.create_user("alice", password="correct horse battery")


@pytest.fixture
def bob(db):
    return User.objects.create_user("bob", password="correct horse battery")


@pytest.fixture
def staff(db):
    return User.objects.create_user("root", password="correct horse battery", is_staff=True)


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Users made inside the test process; the web subprocess keeps the real hashers."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def own_data_dir(tmp_path, settings, monkeypatch):
    """Each test gets its own DATA_DIR, here and in the subprocesses it starts:
    SQLite hands out a rolled-back test's job ids again, and a job folder left
    by one test must not show up in the next."""
    data_dir = tmp_path / "data"
    settings.DATA_DIR, settings.JOBS_DIR = data_dir, data_dir / "jobs"
    monkeypatch.setenv("DATA_DIR", str(data_dir))


@pytest.fixture(autouse=True)
def empty_redis():
    """Each test starts with the suite's Redis as empty as its database: the
    Redis server outlives the tests, and SQLite hands a rolled-back test's
    job ids out again. A job message one test left in the broker (its job
    requeued with no worker to take it) made the next test's worker claim
    that test's job of the same id first, out of turn, while its first job
    stayed queued. The broker's queue bindings stay: this process declared
    its queues once and would not bind them again."""
    from django.conf import settings

    from jobs.bus import client

    bindings = settings.CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] + "_kombu.binding."
    stale = [key for key in client().scan_iter(match=f"{settings.REDIS_PREFIX}:*", count=1000)
             if not key.decode().startswith(bindings)]
    if stale:
        client().delete(*stale)


@pytest.fixture(autouse=True)
def signal_handlers_kept():
    """Each test leaves this process's SIGTERM and SIGINT handlers as it
    found them. A job's ``main()`` called here installs its own (a flag
    that stops it at the next step) for good; the processes a later test
    forks inherit it, and a multiprocessing pool's children then ignored
    the SIGTERM of its ``terminate()``, which waited for them until the
    test's timeout (seen once the suite's files ran spread over processes,
    in another order)."""
    kept = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGINT)}
    yield
    for number, handler in kept.items():
        signal.signal(number, handler)


@pytest.fixture
def refusals() -> set[str]:
    """URL paths (``/datasets/new/``) whose refusal a browser test expects:
    the console line the browser writes for their 4xx answer fails no test."""
    return set()


def _refused_as_expected(message, refusals: set[str]) -> bool:
    return message.text.startswith("Failed to load resource: the server responded with a status of 4") and \
        urlsplit(message.location.get("url", "")).path in refusals


@pytest.fixture
def page(web, refusals, monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the test's own
    # database calls are still plain synchronous ones.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        page = browser.new_page(base_url=web.url)
        page.set_default_timeout(30_000)
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # A console error (a refused Content-Security-Policy, a 404) or a
        # request that failed fails the test as well; a live stream cut off
        # by leaving the page (ERR_ABORTED) is no failure.
        page.on("console", lambda message: message.type == "error" and not _refused_as_expected(message, refusals)
                and errors.append(message.text))
        page.on("requestfailed", lambda request: "ERR_ABORTED" not in (request.failure or "")
                and errors.append(f"{request.method} {request.url}: {request.failure}"))
        yield page
        browser.close()
        # While Playwright's loop runs in this thread, Django keeps the test's
        # connection apart from the thread's; close it before the loop ends,
        # or it outlives the test and the test database cannot be dropped.
        connections.close_all()
        assert not errors, f"errors in the browser: {errors}"


@pytest.fixture(autouse=True)
def no_connection_left_in_asgirefs_thread():
    """A test that runs the app's async code with ``asyncio.run`` (the event
    streams' tests) makes its ``sync_to_async`` calls, outside any request,
    in asgiref's one thread for such calls, which outlives the test: the
    database connection it opened there stayed open, and PostgreSQL then
    refused to drop the test database at the session's end ("being accessed
    by other users"). Closed after each test."""
    from asgiref.sync import SyncToAsync

    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)
