"""A runner waits for its job's writes and its process's end instead of
polling (``jobs/folderwatch.py``): each wait returns on a write, on the
end, or at its timeout, and writes without pause are taken in batches.
The processes are real; no test may need the machine to be quick, only
that a wait is ended by what should end it, long before its timeout."""

import logging
import subprocess
import sys
import threading
import time

import pytest

from jobs.folderwatch import FolderWatch

LONG = 30.0  # a timeout no wait here should reach


@pytest.fixture
def sleeper():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def write_later(path, delay: float) -> threading.Thread:
    def write() -> None:
        time.sleep(delay)
        with open(path, "a") as handle:
            handle.write('{"seq": 1}\n')

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_a_write_in_the_folder_ends_the_wait(tmp_path, sleeper):
    with FolderWatch(tmp_path, sleeper.pid, 0.0, 0.02) as watch:
        assert watch.notified
        writer = write_later(tmp_path / "events.jsonl", 0.3)
        start = time.monotonic()
        watch.wait(LONG)
        waited = time.monotonic() - start
        writer.join()
    assert 0.25 <= waited < LONG / 3


def test_a_new_file_ends_the_wait_and_a_quiet_folder_waits_the_timeout(tmp_path, sleeper):
    with FolderWatch(tmp_path, sleeper.pid, 0.0, 0.02) as watch:
        start = time.monotonic()
        watch.wait(0.5)
        assert time.monotonic() - start >= 0.5  # nothing written: no early wake
        (tmp_path / "log.txt").touch()
        start = time.monotonic()
        watch.wait(LONG)
        assert time.monotonic() - start < LONG / 3


def test_the_process_ending_ends_the_wait(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    with FolderWatch(tmp_path, process.pid, 0.0, 0.02) as watch:
        start = time.monotonic()
        watch.wait(LONG)
        assert time.monotonic() - start < LONG / 3
        assert process.wait(timeout=LONG) == 0


def test_writes_without_pause_wake_it_once_a_gap(tmp_path, sleeper):
    stop = threading.Event()

    def write() -> None:
        with open(tmp_path / "events.jsonl", "a", buffering=1) as handle:
            while not stop.is_set():
                handle.write('{"seq": 1}\n')
                time.sleep(0.001)

    writer = threading.Thread(target=write)
    with FolderWatch(tmp_path, sleeper.pid, 0.1, 0.02) as watch:
        writer.start()
        returns, start = [], time.monotonic()
        while time.monotonic() - start < 1.0:
            watch.wait(LONG)
            returns.append(time.monotonic())
        stop.set()
        writer.join()
    gaps = [later - earlier for earlier, later in zip(returns, returns[1:], strict=False)]
    assert len(returns) >= 2  # woken by the writes, not by the 30 s timeout
    assert min(gaps) >= 0.1  # polled every 1 ms of writes, it would be hundreds in a second
    assert len(returns) <= 11


def test_a_folder_that_cannot_be_watched_is_polled_and_says_so(tmp_path, sleeper, caplog):
    with caplog.at_level(logging.WARNING, logger="jobs.folderwatch"):
        watch = FolderWatch(tmp_path / "gone", sleeper.pid, 0.0, 0.05)
    with watch:
        assert not watch.notified
        start = time.monotonic()
        watch.wait(LONG)
        assert 0.05 <= time.monotonic() - start < LONG / 3
    assert "watching gone by polling every 0.05 s" in caplog.text
