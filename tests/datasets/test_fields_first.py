"""An upload's other fields are checked before its archive is read
(web/fieldsfirst.py): a mistake there is refused with the field's
message while the archive is still being sent, and nothing is stored."""

from __future__ import annotations

import socket

import httpx
from django.http import QueryDict

from accounts.models import ApiToken
from datasets.taskpages import sent_field_errors
from jobs.models import Job
from tests.datasetfiles import class_folders, tar_of
from web.fieldsfirst import fields_before_file

BOUNDARY = b"b0undary"


def part(name: str, value: str) -> bytes:
    return b"--" + BOUNDARY + f'\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()


FILE_START = b"--" + BOUNDARY + b'\r\nContent-Disposition: form-data; name="archive"; filename="a.tar"\r\n\r\n'


def test_the_fields_before_the_file_are_read_and_the_file_is_not():
    body = part("width", "0") + part("name", "a") + FILE_START + b"\x00" * 100
    fields, file_follows = fields_before_file(body, BOUNDARY)
    assert fields == QueryDict("width=0&name=a") and file_follows


def test_a_body_cut_short_before_the_file_is_not_judged_yet():
    body = part("width", "0") + part("name", "a") + FILE_START
    for end in range(len(body) - len(FILE_START) // 2):
        assert fields_before_file(body[:end], BOUNDARY) is None


def test_a_body_without_a_file_ends_with_its_fields():
    body = part("width", "16") + b"--" + BOUNDARY + b"--\r\n"
    assert fields_before_file(body, BOUNDARY) == (QueryDict("width=16"), False)


def test_only_the_fields_sent_so_far_are_judged_before_the_file(db):
    assert sent_field_errors(QueryDict("name=colours")) == {}  # the source and its folder may come after the file
    errors = sent_field_errors(QueryDict("name=colours&width=0&val_percent=60&test_percent=50"))
    assert set(errors) == {"width", "val_percent"}


def uploads(settings) -> list:
    folder = settings.DATA_DIR / "uploads"
    return list(folder.iterdir()) if folder.exists() else []


def test_a_bad_field_is_refused_while_the_archive_is_still_on_its_way(alice, web, settings):
    _, key = ApiToken.issue(alice, "upload")
    fields = part("name", "colours") + part("source", "archive") + part("width", "0") + part("resize_mode", "stretch")
    announced = 50 * 1024 * 1024  # the client says 50 MB follow, and sends 64 KB of them
    head = (f"POST /api/datasets HTTP/1.1\r\nHost: x\r\nAuthorization: Token {key}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY.decode()}\r\n"
            f"Content-Length: {announced}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", int(web.url.rsplit(":", 1)[1])), timeout=20) as conn:
        conn.sendall(head + fields + FILE_START + b"\x00" * 64 * 1024)
        answer = b""
        while chunk := conn.recv(65536):  # the server closes the connection after its answer
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[1] == b"400", answer
    body = httpx.Response(400, content=rest.partition(b"\r\n\r\n")[2]).json()
    assert body["errors"]["width"][0]["message"] == "Ensure this value is greater than or equal to 1."
    assert "stretch is not one of the available choices" in body["errors"]["resize_mode"][0]["message"]
    assert "width: Ensure this value" in body["error"]
    assert uploads(settings) == []
    assert not Job.objects.exists()


def test_good_fields_let_the_archive_through_to_the_whole_form(alice, web, tmp_path, settings):
    _, key = ApiToken.issue(alice, "upload")
    archive = tar_of(class_folders(tmp_path / "src", {"red": 3, "blue": 3}), tmp_path / "a.tar.gz")
    with open(archive, "rb") as handle:
        response = httpx.post(f"{web.url}/api/datasets", data={"name": "colours", "source": "archive", "width": "8",
                                                               "height": "8", "val_percent": "40"},
                              files={"archive": ("a.tar.gz", handle)}, headers={"Authorization": f"Token {key}"})
    assert response.status_code == 201, response.text
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.folder / "upload" / "archive.tar.gz").read_bytes() == archive.read_bytes()


def test_fields_past_256_kib_are_left_to_the_form_and_the_body_reaches_it_whole(alice, web, tmp_path, settings):
    """The fields are judged before the archive only within the first
    ``MAX_FIELDS_BYTES`` (256 KiB) of the body (the tests above: a few
    hundred bytes); after 300 KiB of another field first, the body read so
    far is handed on with the rest, and the form judges it all."""
    _, key = ApiToken.issue(alice, "upload")
    archive = tar_of(class_folders(tmp_path / "src", {"red": 3, "blue": 3}), tmp_path / "a.tar.gz")
    fields = {"padding": "x" * 300 * 1024, "name": "colours", "source": "archive", "height": "8", "val_percent": "40"}
    for width, status in (("0", 400), ("8", 201)):
        with open(archive, "rb") as handle:
            response = httpx.post(f"{web.url}/api/datasets", data={**fields, "width": width}, timeout=30,
                                  files={"archive": ("a.tar.gz", handle)}, headers={"Authorization": f"Token {key}"})
        assert response.status_code == status, response.text
        if status == 400:
            assert response.json()["errors"]["width"][0]["message"] == "Ensure this value is greater than or equal to 1."
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.folder / "upload" / "archive.tar.gz").read_bytes() == archive.read_bytes()
