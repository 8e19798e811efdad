"""Large uploads stream to disk through the real ASGI server: a 200 MB archive
is accepted without the web server's memory growing with it, in DATA_DIR
rather than the system's temporary folder, and an upload over the limit is
refused with a clear message."""

from __future__ import annotations

import os
import tarfile
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from accounts.models import ApiToken
from jobs.models import Job, Status
from jobs.uploadfiles import LimitedTemporaryFileUploadHandler
from tests.datasetfiles import class_folders
from tests.jobtools import wait_status
from tests.processes import start_web, wait_for
from tests.redisserver import free_port

FIELDS = {"name": "big", "source": "archive", "width": "4", "height": "4", "val_percent": "0", "test_percent": "0",
          "image_type": "color", "resize_mode": "squash", "min_per_class": "1", "encoding": "none", "quality": "90",
          "seed": "1"}


def peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def big_archive(tmp_path, megabytes: int):
    """Two classes of images plus a large incompressible file (skipped as not an image)."""
    source = class_folders(tmp_path / "src", {"red": 2, "blue": 2})
    (source / "red" / "padding.bin").write_bytes(os.urandom(megabytes * 1024 * 1024))
    archive = tmp_path / "big.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(source, arcname="big")
    return archive


def test_a_200_mb_archive_uploads_and_builds(alice, worker, web, tmp_path):
    _, key = ApiToken.issue(alice, "upload")
    archive = big_archive(tmp_path, 200)
    assert archive.stat().st_size > 200 * 1024 * 1024
    before = peak_rss(web.pid)
    with open(archive, "rb") as handle:
        response = httpx.post(f"{web.url}/api/datasets", data={**FIELDS, "keep_upload": "on"},
                              files={"archive": ("big.tar", handle)},
                              headers={"Authorization": f"Token {key}"}, timeout=120)
    assert response.status_code == 201, response.text
    assert peak_rss(web.pid) - before < 64 * 1024 * 1024  # streamed to disk, not held in memory
    job = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=120)
    assert job.status == Status.DONE, job.error
    assert (job.folder / "upload" / "archive.tar").stat().st_size == archive.stat().st_size


@pytest.fixture
def one_mb_limit(monkeypatch):
    monkeypatch.setenv("UPLOAD_MAX_BYTES", str(1024 * 1024))


def test_an_upload_over_the_limit_is_refused_with_a_message(alice, one_mb_limit, web, tmp_path):
    _, key = ApiToken.issue(alice, "upload")
    archive = big_archive(tmp_path, 3)
    with open(archive, "rb") as handle:
        response = httpx.post(f"{web.url}/api/datasets", data={**FIELDS, "keep_upload": "on"},
                              files={"archive": ("big.tar", handle)},
                              headers={"Authorization": f"Token {key}"}, timeout=60)
    assert response.status_code == 413
    assert "larger than the limit of 1.0\xa0MB" in response.json()["error"]
    assert not Job.objects.exists()


def open_files(pid: int) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            continue
    return found


def test_an_upload_is_spooled_to_the_data_folder_not_the_system_temp_folder(alice, worker, web, tmp_path, settings):
    _, key = ApiToken.issue(alice, "upload")
    archive = big_archive(tmp_path, 3).read_bytes()
    boundary = "spool-test-boundary"
    head = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
                   for name, value in FIELDS.items()).encode()
    head += (f'--{boundary}\r\nContent-Disposition: form-data; name="archive"; filename="big.tar"\r\n'
             "Content-Type: application/x-tar\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    half = len(archive) // 2
    spool = str(settings.DATA_DIR / "uploads")  # the web server's FILE_UPLOAD_TEMP_DIR
    system = tempfile.gettempdir()
    seen: list[str] = []

    def body():
        yield head + archive[:half]
        # Over FILE_UPLOAD_MAX_MEMORY_SIZE by now: the body being received is in a file.
        seen.extend(wait_for(lambda: [f for f in open_files(web.pid) if os.path.dirname(f) in (spool, system)],
                             timeout=30, what="the web server to spool the body being received"))
        yield archive[half:] + tail

    response = httpx.post(f"{web.url}/api/datasets", content=body(), timeout=60, headers={
        "Authorization": f"Token {key}", "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(len(head) + len(archive) + len(tail))})
    assert response.status_code == 201, response.text
    assert all(os.path.dirname(f) == spool for f in seen), seen
    job = wait_status(Job.objects.get(pk=response.json()["id"]), Status.DONE, Status.FAILED, timeout=60)
    assert job.status == Status.DONE, job.error


def test_a_web_server_removes_the_uploads_a_dead_one_left_but_not_those_being_written(db_url, log_dir, settings):
    uploads = settings.DATA_DIR / "uploads"
    uploads.mkdir(parents=True)
    settings.FILE_UPLOAD_TEMP_DIR = str(uploads)
    left = uploads / "tmpk1lled.upload.tar"  # what a web process killed during a multipart parse leaves
    left.write_bytes(b"x" * 4096)
    # A request of another web process (here, this one) writing its upload.
    live = LimitedTemporaryFileUploadHandler()
    live.new_file("archive", "live.tar", "application/x-tar", 4096)
    live.receive_data_chunk(b"y" * 4096, 0)
    an_hour_ago = time.time() - 3600
    for path in (left, Path(live.file.temporary_file_path())):
        os.utime(path, (an_hour_ago, an_hour_ago))
    port = free_port()
    web = start_web(db_url, port, log_dir)
    try:
        assert sorted(uploads.iterdir()) == [Path(live.file.temporary_file_path())]
    finally:
        web.stop()
        live.file.close()
