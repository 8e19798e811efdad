"""Large uploads stream to disk through the real ASGI server: a 200 MB archive
is accepted without the web server's memory growing with it, and an upload
over the limit is refused with a clear message."""

from __future__ import annotations

import os
import tarfile

import httpx
import pytest

from accounts.models import ApiToken
from jobs.models import Job, Status
from tests.datasetfiles import class_folders
from tests.jobtools import wait_status

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
