"""Request bodies over the limit are refused with 413 before the web server
reads them (web/bodylimit.py); only signed-in users may send large
bodies, and only to the upload addresses. Through the real ASGI server."""

from __future__ import annotations

import io
import itertools
import json
import socket
import tarfile

import httpx
import pytest

from accounts.models import ApiToken
from jobs.models import Job, Status
from tests.processes import start_web
from tests.redisserver import free_port

LIMIT = 64 * 1024


@pytest.fixture
def small_limit_web(db_url, log_dir, settings):
    port = free_port()
    service = start_web(db_url, port, log_dir, REQUEST_MAX_BYTES=str(LIMIT))
    service.url = f"http://127.0.0.1:{port}"
    service.data_dir = settings.DATA_DIR
    yield service
    service.stop()


@pytest.fixture
def token(alice) -> str:
    return ApiToken.issue(alice, "tests")[1]


def chunks(total: int, size: int = 16 * 1024):
    for start in range(0, total, size):
        yield b"x" * min(size, total - start)


def tar_of_zeros(size: int) -> bytes:
    """A tar of one file of ``size`` zero bytes."""
    info = tarfile.TarInfo("zeros")
    info.size = size
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.addfile(info, io.BytesIO(bytes(size)))
    return out.getvalue()


def test_an_anonymous_huge_body_is_refused_from_its_headers_alone(small_limit_web):
    # The answer comes before a byte of the body was sent.
    with socket.create_connection(("127.0.0.1", int(small_limit_web.url.rsplit(":", 1)[1])), timeout=10) as conn:
        conn.sendall(b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n"
                     b"Content-Length: 419430400\r\n\r\n")
        answer = b""
        while chunk := conn.recv(4096):  # the server closes the connection after its answer
            answer += chunk
    answer = answer.decode(errors="replace")
    assert answer.startswith("HTTP/1.1 413"), answer
    assert "larger than the limit of 64" in answer


def test_a_streamed_body_is_cut_off_once_it_passes_the_limit(small_limit_web):
    answer = httpx.post(f"{small_limit_web.url}/api/jobs", content=chunks(4 * LIMIT), timeout=30)
    assert answer.status_code == 413
    assert "larger than the limit" in answer.json()["error"]


def test_a_signed_in_user_may_upload_a_large_archive_to_the_upload_address(small_limit_web, token):
    files = {"archive": ("big.tar", tar_of_zeros(4 * LIMIT), "application/x-tar")}
    answer = httpx.post(f"{small_limit_web.url}/api/datasets", files=files, data={"name": "big", "source": "archive"},
                        headers={"Authorization": f"Token {token}"}, timeout=30)
    assert answer.status_code == 201, answer.text  # the build then finds what is wrong with the archive


def test_nobody_else_may_send_large_bodies_to_it_nor_anywhere_else(small_limit_web, token):
    files = {"archive": ("big.tar", tar_of_zeros(4 * LIMIT), "application/x-tar")}
    anonymous = httpx.post(f"{small_limit_web.url}/api/datasets", files=files, timeout=30)
    assert anonymous.status_code == 413
    bad_token = httpx.post(f"{small_limit_web.url}/api/datasets", files=files, timeout=30,
                           headers={"Authorization": "Token not-a-token"})
    assert bad_token.status_code == 413
    elsewhere = httpx.post(f"{small_limit_web.url}/api/jobs", content=b"{" + b" " * (4 * LIMIT) + b"}",
                           headers={"Authorization": f"Token {token}", "Content-Type": "application/json"}, timeout=30)
    assert elsewhere.status_code == 413


def test_small_bodies_pass(small_limit_web, token):
    answer = httpx.post(f"{small_limit_web.url}/api/jobs", json={"kind": "nothing"},
                        headers={"Authorization": f"Token {token}"}, timeout=30)
    assert answer.status_code == 400


def raw_answer(web, head: bytes) -> str:
    """Send a request's head alone and read the answer: one that waited for
    the body would time out, as no byte of it is ever sent."""
    with socket.create_connection(("127.0.0.1", int(web.url.rsplit(":", 1)[1])), timeout=5) as conn:
        conn.sendall(head)
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    return answer.decode(errors="replace")


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "DELETE"])
def test_a_body_on_a_method_that_takes_none_is_refused_before_it_is_read(small_limit_web, method):
    uploads = small_limit_web.data_dir / "uploads"
    chunked = raw_answer(small_limit_web, f"{method} /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          "Transfer-Encoding: chunked\r\n\r\n".encode())
    assert chunked.startswith("HTTP/1.1 400"), chunked
    if method != "HEAD":
        assert f"A {method} request takes no body." in chunked
    declared = raw_answer(small_limit_web, f"{method} /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                           "Content-Length: 2147483648\r\n\r\n".encode())
    assert declared.startswith("HTTP/1.1 400"), declared
    if method != "HEAD":
        assert json.loads(declared.split("\r\n\r\n", 1)[1]) == {"error": f"A {method} request takes no body."}
    assert not any(uploads.iterdir())


QUOTA = 1_000_000


@pytest.fixture
def quota_web(db_url, log_dir, settings):
    port = free_port()
    service = start_web(db_url, port, log_dir, DISK_QUOTA_BYTES=str(QUOTA), REQUEST_MAX_BYTES=str(LIMIT))
    service.url = f"http://127.0.0.1:{port}"
    yield service
    service.stop()


def holding(user, size: int) -> Job:
    """A finished job of ``user`` whose folder holds ``size`` bytes."""
    job = Job.objects.create(kind="sleep", name="old", owner=user, status=Status.DONE)
    (job.folder / "checkpoints").mkdir(parents=True)
    (job.folder / "checkpoints" / "big.pt").write_bytes(b"x" * size)
    return job


def test_an_upload_that_would_pass_the_disk_quota_is_refused_from_its_declared_length(quota_web, alice, token):
    holding(alice, QUOTA - 200_000)
    answer = raw_answer(quota_web, b"POST /api/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                   b"Authorization: Token " + token.encode() + b"\r\n"
                                   b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1570000000\r\n\r\n")
    assert answer.startswith("HTTP/1.1 403"), answer
    assert json.loads(answer.split("\r\n\r\n", 1)[1])["error"] == (
        "alice's jobs hold 781.2\xa0KB on disk, their quota is 976.6\xa0KB: this upload of 1.5\xa0GB does not fit; "
        "delete some jobs to make room.")


def test_a_streamed_upload_is_cut_off_once_it_passes_the_disk_quota(quota_web, alice, token):
    holding(alice, QUOTA - 200_000)
    head = (b'--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n'
            b'--b\r\nContent-Disposition: form-data; name="source"\r\n\r\narchive\r\n'
            b'--b\r\nContent-Disposition: form-data; name="archive"; filename="big.tar"\r\n\r\n')
    body = itertools.chain([head], chunks(16 * LIMIT), [b"\r\n--b--\r\n"])  # sent in chunks, no length
    answer = httpx.post(f"{quota_web.url}/api/datasets", content=body, timeout=30,
                        headers={"Authorization": f"Token {token}", "Content-Type": "multipart/form-data; boundary=b"})
    assert answer.status_code == 403
    assert "their quota is 976.6\xa0KB: this upload does not fit" in answer.json()["error"]
    assert not Job.objects.filter(name="big").exists()


def test_a_user_over_the_disk_quota_may_upload_nothing(quota_web, alice, token):
    holding(alice, QUOTA + 1)
    answer = httpx.post(f"{quota_web.url}/api/pretrained", content=b"x" * 2 * LIMIT, timeout=30,
                        headers={"Authorization": f"Token {token}", "Content-Type": "multipart/form-data; boundary=b"})
    assert answer.status_code == 403
    assert "delete some jobs to make room" in answer.json()["error"]


def test_a_body_of_exactly_the_limit_passes_and_one_byte_more_is_refused(small_limit_web, token):
    """``REQUEST_MAX_BYTES`` (lowered to 64 KiB for this server): a body of
    that size reaches the view (which finds no kind in it), declared or
    streamed; one byte more is refused with 413 either way."""
    url, headers = f"{small_limit_web.url}/api/jobs", {"Authorization": f"Token {token}",
                                                        "Content-Type": "application/json"}
    for size, status in ((LIMIT, 400), (LIMIT + 1, 413)):
        body = b"{" + b" " * (size - 2) + b"}"
        assert httpx.post(url, content=body, headers=headers, timeout=30).status_code == status
        streamed = iter([body[:size // 2], body[size // 2:]])
        assert httpx.post(url, content=streamed, headers=headers, timeout=30).status_code == status
