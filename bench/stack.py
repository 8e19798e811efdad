"""A throwaway digitslike stack for benchmarks: its own Redis, SQLite
database and data folder, a real worker and a real web server, built from the
same pieces the test suite uses."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.redisserver import RedisServer, free_port  # noqa: E402


class Stack:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="digitslike-bench-"))
        self.redis = RedisServer(self.folder / "redis")
        self.redis.start()
        self.db_url = f"sqlite:///{self.folder / 'db.sqlite3'}"
        os.environ.update({
            "DJANGO_SETTINGS_MODULE": "digitslike.settings",
            "DATA_DIR": str(self.folder / "data"),
            "REDIS_URL": self.redis.url,
            "REDIS_PREFIX": "dlbench",
            "DATABASE_URL": self.db_url,
            "JOB_KINDS_MODULES": "tests.jobkinds",
            "LOG_LEVEL": "WARNING",
        })
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        self.services = []

    def user(self):
        from django.contrib.auth.models import User

        return User.objects.create_user("bench", password="bench-password-1")

    def start_worker(self):
        from tests.processes import start_worker

        service = start_worker(self.db_url, self.folder)
        self.services.append(service)
        return service

    def start_web(self):
        from tests.processes import start_web

        port = free_port()
        service = start_web(self.db_url, port, self.folder)
        service.url = f"http://127.0.0.1:{port}"
        self.services.append(service)
        return service

    def start_launched_web(self, **env: str):
        """The web server exactly as ``make run`` starts it (the launcher's
        command line), on a free port of this machine."""
        from digitslike import launch
        from tests.processes import Service, wait_answers

        port = free_port()
        argv = next(s.argv for s in launch.services(None, "127.0.0.1", str(port)) if s.name == "web")
        service = Service(argv, {"DATABASE_URL": self.db_url, **env}, self.folder / "web.log")
        service.url = f"http://127.0.0.1:{port}"
        self.services.append(service)
        wait_answers(service.process, service.url, service.output, timeout=30)
        return service

    def close(self) -> None:
        """Stop everything and remove the folder (a photo import leaves over
        600 MiB there); what a run has to say it has printed."""
        for service in self.services:
            service.stop()
        self.redis.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def report(setup: str, app_name: str, app: list[float], plain_name: str, plain: list[float]) -> None:
    """Print the machine, the set-up, p50/p95 of both series and their ratios."""
    print(f"machine: {machine()}")
    print(setup)
    for name, values in ((app_name, app), (plain_name, plain)):
        print(f"{name:40s} p50 {percentile(values, 50) * 1000:7.1f} ms   p95 {percentile(values, 95) * 1000:7.1f} ms")
    print(f"ratio app/plain: p50 {percentile(app, 50) / percentile(plain, 50):.2f}x, "
          f"p95 {percentile(app, 95) / percentile(plain, 95):.2f}x")


def machine() -> str:
    import platform

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"
