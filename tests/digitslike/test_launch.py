"""The README's first command ends in ``python -m digitslike.launch``: migrate,
start (or reuse) Redis, start the worker and the web server, print the URL,
and stop everything on Ctrl-C. Run for real, in a fresh data folder."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import redis

from digitslike import launch
from tests.processes import ROOT, wait_answers, wait_for
from tests.redisserver import RedisServer, free_port
from trainer import modelclient


def processes_using(data_dir: Path) -> list[int]:
    """Pids whose environment or command line names this data folder (the
    launcher's children: the model server's environment holds no DATA_DIR,
    its command line names the folder)."""
    marker = f"DATA_DIR={data_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0") or \
                        str(data_dir).encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def children_of(pid: int) -> list[int]:
    """Pids whose parent is ``pid``, from ``/proc/<pid>/stat``, which any user
    may read (the web server and the worker keep their ``environ`` private)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


class Launch:
    def __init__(self, data_dir: Path, redis_url: str, log: Path) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SQLITE_TEST_NAME")}
        env.update(DATA_DIR=str(data_dir), REDIS_URL=redis_url, PORT=str(self.port), REDIS_PREFIX="dllaunch")
        self.log = log
        self.started = time.monotonic()
        with open(log, "ab") as out:
            self.process = subprocess.Popen([sys.executable, "-m", "digitslike.launch"], cwd=ROOT, env=env,
                                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_up(self) -> float:
        wait_answers(self.process, self.url, self.output, timeout=120)
        return time.monotonic() - self.started

    def ctrl_c(self) -> int:
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(30)


@pytest.fixture
def launch_dir(tmp_path):
    yield tmp_path / "data"
    for pid in processes_using(tmp_path / "data"):
        os.kill(pid, signal.SIGKILL)


def test_it_starts_redis_worker_model_server_and_web_prints_the_url_and_ctrl_c_stops_all(launch_dir, tmp_path):
    redis_url = f"redis://127.0.0.1:{free_port()}/0"
    first = Launch(launch_dir, redis_url, tmp_path / "first.log")
    first.wait_up()
    assert f"digitslike is up: {first.url}/" in first.output()
    assert "Redis: started on port" in first.output()
    assert (launch_dir / "db.sqlite3").exists()
    assert redis.Redis.from_url(redis_url).config_get("appendonly") == {"appendonly": "yes"}
    assert (launch_dir / "redis").is_dir()
    wait_for(lambda: redis.Redis.from_url(redis_url).keys("dllaunch:celery:*"), what="the worker to reach Redis")
    wait_for(lambda: redis.Redis.from_url(redis_url).exists("dllaunch:modelserver:alive"), timeout=60,
             what="the model server to reach Redis")
    assert len(children_of(first.process.pid)) >= 4  # Redis, worker, model server, web
    style = httpx.get(f"{first.url}/static/css/app.css", timeout=10)
    assert style.status_code == 200 and "max-age" in style.headers["cache-control"]
    assert httpx.get(f"{first.url}/vendor/plotly.min.js", timeout=10).status_code == 200
    for noise in ("lifespan", "StreamingHttpResponse"):
        assert noise not in first.output(), f"start-up noise: {noise}"

    assert first.ctrl_c() == 0
    wait_for(lambda: not processes_using(launch_dir), timeout=15, what="every started process to stop")

    second = Launch(launch_dir, redis_url, tmp_path / "second.log")
    took = second.wait_up()
    assert "No migrations to apply" in second.output()
    assert took < 30, f"a second start took {took:.1f}s"
    assert second.ctrl_c() == 0
    wait_for(lambda: not processes_using(launch_dir), timeout=15, what="every started process to stop")


def test_it_uses_a_redis_that_answers(launch_dir, tmp_path):
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        launched = Launch(launch_dir, server.url, tmp_path / "launch.log")
        launched.wait_up()
        assert f"Redis: using {server.url}" in launched.output()
        assert not (launch_dir / "redis").exists()
        assert launched.ctrl_c() == 0
        assert server.process.poll() is None  # not ours to stop
    finally:
        server.stop()


def test_a_remote_redis_that_does_not_answer_stops_it_with_a_message(launch_dir, tmp_path):
    # 127.0.0.2 is not one of the names the launcher starts a Redis for, and nothing listens there.
    port = free_port()
    launched = Launch(launch_dir, f"redis://127.0.0.2:{port}/0", tmp_path / "launch.log")
    assert launched.process.wait(60) != 0
    assert f"Redis at 127.0.0.2:{port} does not answer; start it or fix REDIS_URL." in launched.output()


def service_pid(data_dir: Path, argument: bytes) -> int | None:
    for pid in processes_using(data_dir):
        try:
            if argument in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return pid
        except OSError:
            continue
    return None


def test_a_dead_worker_or_web_server_is_started_again_and_the_rest_keeps_serving(launch_dir, tmp_path):
    launched = Launch(launch_dir, f"redis://127.0.0.1:{free_port()}/0", tmp_path / "launch.log")
    launched.wait_up()
    worker = wait_for(lambda: service_pid(launch_dir, b"worker"), what="the worker process")

    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: "worker exited with code -9; starting it again in 1 s" in launched.output(),
             what="the launcher to notice the dead worker")
    assert httpx.get(f"{launched.url}/login/", timeout=10).status_code == 200, "the web server keeps serving"
    wait_for(lambda: (service_pid(launch_dir, b"worker") or worker) != worker, what="a new worker")

    web = service_pid(launch_dir, b"digitslike.asgi:application")
    os.kill(web, signal.SIGKILL)
    wait_for(lambda: "web exited with code -9; starting it again in 1 s" in launched.output(),
             what="the launcher to notice the dead web server")
    wait_answers(launched.process, launched.url, launched.output, timeout=60)
    assert launched.process.poll() is None

    assert launched.ctrl_c() == 0
    wait_for(lambda: not processes_using(launch_dir), timeout=15, what="every started process to stop")


SECRETS = {"SECRET_KEY": "s3cret", "DATABASE_URL": "postgres://app:pw@db/app", "ADMIN_PASSWORD": "hunter2",
           "POSTGRES_PASSWORD": "pw", "DB_PASS": "p", "APIKEY": "k", "AWS_SECRET_ACCESS_KEY": "k"}


def test_the_model_server_gets_no_secret_of_the_launchers_environment(monkeypatch, settings):
    for name, value in {**SECRETS, "OMP_NUM_THREADS": "1", "MODEL_SERVER_MAX_MODELS": "2"}.items():
        monkeypatch.setenv(name, value)
    server = next(service for service in launch.services(None, "127.0.0.1", "8000") if service.name == "modelserver")
    assert settings.REDIS_URL in server.argv, "its Redis address is on its command line"
    process = server.start()
    try:
        client = redis.Redis.from_url(settings.REDIS_URL)
        wait_for(lambda: client.get(modelclient.alive_key(settings.REDIS_PREFIX)) == str(process.pid).encode(),
                 timeout=90, what="the model server to start")
        environ = dict(entry.split(b"=", 1) for entry in Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
                       if entry)
    finally:
        process.terminate()
        process.wait(30)
    names = {name.decode() for name in environ}
    assert not names & set(SECRETS), "the model server runs models' code: no secret in its environment"
    assert {"PATH", "OMP_NUM_THREADS", "MODEL_SERVER_MAX_MODELS"} <= names
