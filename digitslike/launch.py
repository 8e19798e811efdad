"""``python -m digitslike.launch``: migrate, make sure Redis answers, then run
the web server and one worker until Ctrl-C, which stops all of them.

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
from urllib.parse import urlparse

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")
django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
STOP_GRACE_SECONDS = 10
# Open live-event streams never end by themselves; stop waiting for them after this.
WEB_SHUTDOWN_SECONDS = 2


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


def start_redis(url: str) -> subprocess.Popen | None:
    """Use the Redis at ``url``, or start one there with AOF under DATA_DIR."""
    if redis_answers(url):
        print(f"Redis: using {url}")
        return None
    parsed = urlparse(url)
    if parsed.hostname not in LOCAL_HOSTS:
        raise LaunchError(f"Redis at {parsed.hostname}:{parsed.port or 6379} does not answer; start it or fix REDIS_URL.")
    directory = settings.DATA_DIR / "redis"
    directory.mkdir(parents=True, exist_ok=True)
    port = str(parsed.port or 6379)
    process = subprocess.Popen(
        [redis_server_binary(), "--port", port, "--bind", "127.0.0.1", "--dir", str(directory),
         "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--logfile", "redis.log"],
        start_new_session=True,
    )
    for _ in range(100):
        if redis_answers(url):
            print(f"Redis: started on port {port}, data in {directory}")
            return process
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise LaunchError(f"redis-server did not start; see {directory / 'redis.log'}")


def start(name: str, argv: list[str]) -> subprocess.Popen:
    # A session of its own: Ctrl-C reaches only this launcher, which then
    # stops each process the way that process needs.
    print(f"Starting {name}…", flush=True)
    return subprocess.Popen(argv, start_new_session=True, cwd=settings.BASE_DIR)


def stop(processes: dict[str, tuple[subprocess.Popen, int]]) -> None:
    for process, signum in processes.values():
        if process.poll() is None:
            process.send_signal(signum)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for name, (process, _) in processes.items():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(f"{name} did not stop in time; killing it", flush=True)
            process.kill()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
    call_command("migrate", interactive=False, verbosity=1)
    processes: dict[str, tuple[subprocess.Popen, int]] = {}
    host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
    try:
        redis_process = start_redis(settings.REDIS_URL)
        python = sys.executable
        # The worker is stopped at once (SIGQUIT, Celery's cold shutdown):
        # its jobs' process groups end with it, and the reconciler requeues
        # the jobs when a worker starts again.
        processes["worker"] = (start("worker", [python, "manage.py", "worker"]), signal.SIGQUIT)
        processes["web"] = (start("web", [python, "-m", "uvicorn", "digitslike.asgi:application",
                                          "--host", host, "--port", port, "--no-access-log",
                                          "--timeout-graceful-shutdown", str(WEB_SHUTDOWN_SECONDS)]), signal.SIGTERM)
        if redis_process:
            processes["redis"] = (redis_process, signal.SIGTERM)
        print(f"\n  digitslike is up: http://{host}:{port}/   (Ctrl-C stops it)\n", flush=True)
        signal.signal(signal.SIGTERM, _interrupt)
        while True:
            for name, (process, _) in processes.items():
                if process.poll() is not None:
                    print(f"{name} exited with code {process.returncode}; stopping everything", flush=True)
                    return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nStopping…", flush=True)
        return 0
    finally:
        stop(processes)


if __name__ == "__main__":
    sys.exit(main())
