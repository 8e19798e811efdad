"""Real subprocesses for integration tests: Celery workers and the ASGI web
server, started the way ``manage.py worker`` and the launcher start them,
against the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from digitslike.launch import web_command

ROOT = Path(__file__).resolve().parent.parent


def wait_for(predicate: Callable[[], object], timeout: float = 20.0, every: float = 0.05,
             what: str | Callable[[], str] = "condition"):
    """Poll until predicate() is truthy; return its value or fail with
    ``what``, called at the timeout if it is a function (so that the message
    says how things stood then)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
        time.sleep(every)


def database_url(settings_dict: dict) -> str:
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or "5432"
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"


class Service:
    """A subprocess in its own session, stopped with its whole process group."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.process = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **env}, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL the process alone, as a crash or the OOM killer would."""
        self.process.kill()
        self.process.wait(10)

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 15) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signum)
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
            except ProcessLookupError:
                pass
        self.log.close()


def start_worker(db_url: str, log_dir: Path, name: str = "worker", **env: str) -> Service:
    return Service([sys.executable, "manage.py", "worker", "--loglevel", "WARNING"],
                   {"DATABASE_URL": db_url, **env}, log_dir / f"{name}.log")


def start_web(db_url: str, port: int, log_dir: Path, **env: str) -> Service:
    command = web_command("127.0.0.1", str(port), env.get("FORWARDED_ALLOW_IPS", ""), "--log-level", "warning",
                          "--timeout-graceful-shutdown", "1")
    service = Service(command, {"DATABASE_URL": db_url, **env}, log_dir / "web.log")

    wait_answers(service.process, f"http://127.0.0.1:{port}", service.output, timeout=30)
    return service


def wait_answers(process: subprocess.Popen, url: str, output: Callable[[], str], timeout: float) -> None:
    """Wait until the app at ``url`` serves its sign-in page; fail with the
    process's output if it exits first."""

    def up() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the process exited:\n{output()}")
        try:
            return httpx.get(f"{url}/login/", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    wait_for(up, timeout=timeout, every=0.1, what=f"{url} to answer")
