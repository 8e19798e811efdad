"""The app as ``make run`` starts it (the launcher: its own redis-server,
worker, model server and web server) on a fresh data folder, with a
signed-in HTTP client: what the benchmarks that measure a user's path
drive. Also the CIFAR-10 archive those benchmarks upload."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.redisserver import free_port  # noqa: E402

CIFAR = ROOT.parent / "shared" / "data" / "cifar10-jpg.tar.gz"
PASSWORD = "benchmark-password-1"


class Failed(Exception):
    pass


# What a step of an acceptance run may fail with: its verdict, not a crash of the run.
STEP_ERRORS = (Failed, httpx.HTTPError, OSError, KeyError, ValueError, IndexError, subprocess.TimeoutExpired)


class Steps:
    """An acceptance run's steps: each timed and printed on one line with its
    verdict (the string it returns) or its failure; ``failures`` counts them."""

    def __init__(self, width: int) -> None:
        self.width, self.failures = width, 0

    def run(self, name: str, work: Callable[[], str]) -> bool:
        started = time.monotonic()
        try:
            verdict, ok = work(), True
        except STEP_ERRORS as exc:
            verdict, ok = f"FAILED: {exc}", False
            self.failures += 1
        print(f"{name:{self.width}s} {time.monotonic() - started:7.1f} s  {'ok' if ok else '--'}  {verdict}", flush=True)
        return ok

    def summary(self) -> str:
        return f"{'acceptance':{self.width}s} {'passed' if not self.failures else f'{self.failures} step(s) failed'}"


class LaunchedApp:
    """The launcher's stack and a client signed up as ``username``."""

    def __init__(self, folder: Path, username: str, **env: str) -> None:
        self.folder, self.username = folder, username
        self.url = f"http://127.0.0.1:{free_port()}"
        env = {**os.environ, "DATA_DIR": str(folder / "data"), "PORT": self.url.rsplit(":", 1)[1],
               "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
               "PYTHONUNBUFFERED": "1", **env}
        self.log = open(folder / "launcher.log", "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "digitslike.launch"], cwd=ROOT, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.http = httpx.Client(base_url=self.url, timeout=120)

    def wait_up(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise Failed(f"the launcher exited: {(self.folder / 'launcher.log').read_text()[-2000:]}")
            try:
                if self.http.get("/login/").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise Failed("the app did not answer")

    def sign_up(self) -> None:
        self.http.get("/signup/")
        answer = self.http.post("/signup/", data={
            "username": self.username, "email": f"{self.username}@example.org", "password1": PASSWORD,
            "password2": PASSWORD, "csrfmiddlewaretoken": self.http.cookies["csrftoken"]}, follow_redirects=True)
        if answer.status_code != 200 or self.http.get("/api/me").status_code != 200:
            raise Failed(f"sign-up answered {answer.status_code}")

    def call(self, method: str, path: str, expect: tuple[int, ...] = (200, 201, 202), **options) -> httpx.Response:
        headers = {"X-CSRFToken": self.http.cookies.get("csrftoken", "")}
        answer = self.http.request(method, path, headers=headers, **options)
        if answer.status_code not in expect:
            raise Failed(f"{method} {path} answered {answer.status_code}: {answer.text[:500]}")
        return answer

    def job(self, job_id: int) -> dict:
        return self.call("GET", f"/api/jobs/{job_id}").json()

    def wait_job(self, job_id: int, seconds: float, until: tuple[str, ...] = ("done",), poll: float = 1.0) -> dict:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if job["status"] in until:
                return job
            if job["status"] in ("failed", "aborted"):
                raise Failed(f"job {job_id} {job['status']}: {job['error'] or job['history'][-1]['message']}")
            time.sleep(poll)
        raise Failed(f"job {job_id} is still {self.job(job_id)['status']} after {seconds:.0f} s")

    def job_folder(self, job_id: int) -> Path:
        return self.folder / "data" / "jobs" / str(job_id)

    def events(self, job_id: int, kind: str) -> list[dict]:
        path = self.job_folder(job_id) / "events.jsonl"
        if not path.exists():
            return []
        return [event for event in map(json.loads, path.read_text().splitlines()) if event["kind"] == kind]

    def close(self) -> None:
        self.http.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()


def cifar_archive(target: Path, per_class: int, held_out: int) -> tuple[Path, list[tuple[str, bytes]]]:
    """A tar.gz of ``per_class`` training JPEGs of each class, in class
    folders under one top folder; and ``held_out`` test JPEGs with their class."""
    taken: dict[str, int] = {}
    test: list[tuple[str, bytes]] = []
    with tarfile.open(CIFAR) as source, tarfile.open(target, "w:gz") as out:
        for member in source:
            parts = member.name.split("/")
            if not member.isfile() or len(parts) != 4:
                continue
            _, split, name, _ = parts
            if split == "train" and taken.get(name, 0) < per_class:
                taken[name] = taken.get(name, 0) + 1
                data = source.extractfile(member).read()
                info = tarfile.TarInfo(f"cifar/{name}/{parts[3]}")
                info.size = len(data)
                out.addfile(info, io.BytesIO(data))
            elif split == "test" and len(test) < held_out and sum(1 for c, _ in test if c == name) < 1:
                test.append((name, source.extractfile(member).read()))
            if len(taken) == 10 and min(taken.values()) >= per_class and len(test) >= held_out:
                break
    return target, test
