"""``python -m digitslike.launch``: migrate, make sure Redis answers, then run
the web server, one worker and the model server until Ctrl-C, which stops all
of them. A process that dies meanwhile (killed, out of memory) is started
again after a pause that grows while it keeps dying; the others keep serving.

Redis: ``REDIS_URL`` is used when it answers. Otherwise, for a local URL, a
``redis-server`` is started with its data and append-only file under
``DATA_DIR/redis``; if there is no ``redis-server``, the distribution's package
is installed when this runs as root with apt, else it stops and says what to
install.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from urllib.parse import urlparse

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")
django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from trainer import environment  # noqa: E402

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
STOP_GRACE_SECONDS = 10
# Open live-event streams never end by themselves; stop waiting for them after this.
WEB_SHUTDOWN_SECONDS = 2
# Pauses before restarting a process that died, growing with each death in a
# row; one that then runs for STABLE_SECONDS starts from the first again.
RESTART_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0)
STABLE_SECONDS = 60.0


class LaunchError(SystemExit):
    def __init__(self, message: str) -> None:
        super().__init__(f"digitslike: {message}")


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("Installing redis-server with apt-get…", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server"], check=False, env=env)
        found = shutil.which("redis-server")
        if found:
            return found
    raise LaunchError(
        "Redis is not reachable at REDIS_URL and there is no redis-server to start. Install it "
        "(Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) or set "
        "REDIS_URL to a running Redis, then run this again."
    )


def redis_command(url: str) -> list[str] | None:
    """None when the Redis at ``url`` answers; else the command that starts
    one there, with its data and append-only file under DATA_DIR."""
    if redis_answers(url):
        print(f"Redis: using {url}")
        return None
    parsed = urlparse(url)
    if parsed.hostname not in LOCAL_HOSTS:
        raise LaunchError(f"Redis at {parsed.hostname}:{parsed.port or 6379} does not answer; start it or fix REDIS_URL.")
    directory = settings.DATA_DIR / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    return [redis_server_binary(), "--port", str(parsed.port or 6379), "--bind", "127.0.0.1", "--dir", str(directory),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--logfile", "redis.log"]


def wait_for_redis(url: str, process: subprocess.Popen) -> None:
    for _ in range(100):
        if redis_answers(url):
            print(f"Redis: started on port {urlparse(url).port or 6379}, data in {settings.DATA_DIR / 'redis'}")
            return
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise LaunchError(f"redis-server did not start; see {settings.DATA_DIR / 'redis' / 'redis.log'}")


def start(name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    # A session of its own: Ctrl-C reaches only this launcher, which then
    # stops each process the way that process needs.
    print(f"Starting {name}…", flush=True)
    return subprocess.Popen(argv, start_new_session=True, cwd=settings.BASE_DIR, env=env)


@dataclass
class Service:
    """A process the launcher keeps running until Ctrl-C."""

    name: str
    argv: list[str]
    stop_signal: int
    # Its environment; None: the launcher's.
    env: dict[str, str] | None = None
    process: subprocess.Popen | None = None
    started: float = 0.0
    deaths: int = 0                    # in a row, without a stable run between
    restart_at: float | None = None

    def start(self) -> subprocess.Popen:
        self.process = start(self.name, self.argv, self.env)
        self.started, self.restart_at = time.monotonic(), None
        return self.process

    def look_after(self, now: float) -> None:
        """Restart the process when it died and its pause is over."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.start()
            return
        assert self.process is not None
        code = self.process.poll()
        if code is None:
            if now - self.started >= STABLE_SECONDS:
                self.deaths = 0
            return
        delay = RESTART_DELAYS[min(self.deaths, len(RESTART_DELAYS) - 1)]
        self.deaths += 1
        print(f"{self.name} exited with code {code}; starting it again in {delay:g} s", flush=True)
        self.restart_at = now + delay


def stop(services: list[Service]) -> None:
    running = [s for s in services if s.process and s.process.poll() is None]
    for service in running:
        service.process.send_signal(service.stop_signal)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for service in running:
        try:
            service.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"{service.name} did not stop in time; killing it", flush=True)
            service.process.kill()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def services(redis_argv: list[str] | None, host: str, port: str) -> list[Service]:
    python = sys.executable
    found = [Service("redis", redis_argv, signal.SIGTERM)] if redis_argv else []
    # The worker is stopped at once (SIGQUIT, Celery's cold shutdown): it
    # stops its jobs' process groups and requeues the jobs (jobs.pool).
    found.append(Service("worker", [python, "manage.py", "worker"], signal.SIGQUIT))
    # The model server keeps trained models warm for Classify one; it reads
    # the job folders under DATA_DIR and answers over the same Redis. It
    # builds models' networks, which may be Python code, so it gets a job's
    # environment and its own settings, none of the launcher's secrets.
    found.append(Service("modelserver", [python, "-m", "trainer.modelserver", "--redis-url", settings.REDIS_URL,
                                         "--prefix", settings.REDIS_PREFIX, "--data-dir", str(settings.DATA_DIR)],
                         signal.SIGTERM, environment.allowed(os.environ, environment.MODEL_SERVER_NAMES)))
    found.append(Service("web", web_command(host, port, settings.FORWARDED_ALLOW_IPS, "--no-access-log",
                                            "--timeout-graceful-shutdown", str(WEB_SHUTDOWN_SECONDS)),
                         signal.SIGTERM))
    return found


def web_command(host: str, port: str, forwarded_allow_ips: str, *options: str) -> list[str]:
    """uvicorn serving the app, trusting X-Forwarded-For and -Proto only from
    ``forwarded_allow_ips``: left out, uvicorn would trust them from
    127.0.0.1, and the sign-in limits would count whatever address a local
    client named."""
    return [sys.executable, "-m", "uvicorn", "digitslike.asgi:application", "--host", host, "--port", port,
            "--lifespan", "off", "--forwarded-allow-ips", forwarded_allow_ips, *options]


def main() -> int:
    environment.keep_private()  # it holds every secret; the worker's jobs run as the same user
    settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
    call_command("migrate", interactive=False, verbosity=1)
    call_command("ensure_admin")
    host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
    started: list[Service] = []
    try:
        for service in services(redis_command(settings.REDIS_URL), host, port):
            process = service.start()
            started.append(service)
            if service.name == "redis":
                wait_for_redis(settings.REDIS_URL, process)
        print(f"\n  digitslike is up: http://{host}:{port}/   (Ctrl-C stops it)\n", flush=True)
        # Ctrl-C and SIGTERM stop everything, also where the launcher was
        # started with SIGINT ignored (a background job of a script).
        signal.signal(signal.SIGINT, _interrupt)
        signal.signal(signal.SIGTERM, _interrupt)
        while True:
            now = time.monotonic()
            for service in started:
                service.look_after(now)
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nStopping…", flush=True)
        return 0
    finally:
        stop(started)


if __name__ == "__main__":
    sys.exit(main())
