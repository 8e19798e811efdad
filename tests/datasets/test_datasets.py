"""Dataset imports end to end: the form or API, a real worker running the
build job, the packed store, the report, the pages."""

from __future__ import annotations

import html
import io
import json
import stat

import numpy as np
import pytest
from django.conf import settings as conf
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image

from datasets.forms import defaults
from jobs import kinds
from jobs.models import Job, Status
from tests.datasetfiles import class_folders, image_bytes, tar_of
from tests.evalfiles import uploaded_dataset_job
from tests.jobtools import wait_status
from tests.trainfiles import make_dataset
from trainer import jobfiles
from trainer.datastore import SplitReader
from trainer.targets import ClassLabels
from web import nulbytes
from web import serverfolders as folders


@pytest.fixture
def roots(tmp_path, settings, monkeypatch):
    """The folders imports may read: set here and for the worker."""
    root = tmp_path / "imports"
    root.mkdir()
    settings.DATASET_ROOTS = [str(root)]
    monkeypatch.setenv("DATASET_ROOTS", str(root))
    return root


@pytest.fixture
def client(alice):
    client = Client()
    client.force_login(alice)
    return client


def create(client, **fields):
    response = client.post("/api/datasets", data=json.dumps({"name": "ds", **fields}), content_type="application/json")
    return response


def built(job_id, status=Status.DONE):
    job = wait_status(Job.objects.get(pk=job_id), status, Status.FAILED, timeout=60)
    assert job.status == status, job.error
    return job


def manifest(job):
    return json.loads((job.folder / "dataset" / "manifest.json").read_text())


def test_a_server_folder_becomes_a_split_packed_dataset(client, roots, worker):
    class_folders(roots / "shapes", {"red": 8, "green": 8, "blue": 4})
    response = create(client, source="folder", train_folder=str(roots / "shapes"), width=4, height=4,
                      encoding="none", val_percent=25, test_percent=25)
    assert response.status_code == 201, response.json()
    job = built(response.json()["id"])
    info = manifest(job)
    assert info["classes"] == ["blue", "green", "red"]
    assert info["splits"]["train"]["per_class"] == [2, 4, 4]
    assert info["splits"]["val"]["per_class"] == [1, 2, 2]
    assert info["splits"]["test"]["per_class"] == [1, 2, 2]
    folder = job.folder / "dataset"
    assert (folder / "labels.txt").read_text() == "blue\ngreen\nred\n"
    train = SplitReader(folder, "train", "none", (4, 4, 3), ClassLabels())
    for i in range(len(train)):
        expected = {0: (0, 0, 255), 1: (0, 255, 0), 2: (255, 0, 0)}[int(train.targets[i])]
        assert tuple(train.image(i)[0, 0]) == expected
    mean = np.asarray(Image.open(folder / "mean.png"))
    assert tuple(mean[0, 0]) == (round(255 * 4 / 10), round(255 * 4 / 10), round(255 * 2 / 10))
    for name, entry in info["files"].items():
        assert (folder / name).stat().st_size == entry["bytes"]
    assert not (job.folder / "dataset.partial").exists()
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "JPEG quality" not in page and "<td>Quality</td>" not in page, "raw pixels have no JPEG quality"
    assert "<td>Validation %</td><td>25</td>" in page


def test_the_settings_show_only_the_options_that_applied(client, roots):
    class_folders(roots / "train", {"red": 2, "blue": 2})
    class_folders(roots / "val", {"red": 1, "blue": 1})
    separate = create(client, source="folder", train_folder=str(roots / "train"), val_folder=str(roots / "val"),
                      encoding="png", quality=90, val_percent=25, test_percent=10)
    assert separate.status_code == 201, separate.json()
    rows = {label for _, group in kinds.settings_table(Job.objects.get(pk=separate.json()["id"])) for label, _ in group}
    assert "Test %" in rows and "Validation %" not in rows and "Quality" not in rows, rows
    lists = create(client, source="lists", train_list_path=str(roots / "missing.txt"), encoding="jpeg")
    assert lists.status_code == 400
    jpeg = create(client, source="folder", train_folder=str(roots / "train"), encoding="jpeg", quality=80)
    rows = dict(row for _, group in kinds.settings_table(Job.objects.get(pk=jpeg.json()["id"])) for row in group)
    assert rows["Quality"] == "80" and rows["Validation %"] == "25"


def test_png_and_jpeg_stores_read_back(client, roots, worker):
    class_folders(roots / "s", {"red": 3, "blue": 3})
    for encoding in ("png", "jpeg"):
        job = built(create(client, source="folder", train_folder=str(roots / "s"), width=6, height=6,
                           encoding=encoding, val_percent=0, image_type="grayscale").json()["id"])
        reader = SplitReader(job.folder / "dataset", "train", encoding, (6, 6, 1), ClassLabels())
        assert len(reader) == 6
        values = sorted(int(reader.image(i)[3, 3, 0]) for i in range(6))
        assert abs(values[0] - 29) <= 3 and abs(values[-1] - 76) <= 3  # luma of blue and red


def test_bad_files_are_skipped_and_reported_never_fatal(client, roots, worker):
    folder = class_folders(roots / "mixed", {"red": 2, "blue": 2})
    (folder / "red" / "text.jpg").write_text("not an image at all")
    (folder / "red" / "empty.png").write_bytes(b"")
    good_jpeg = image_bytes(fmt="JPEG", size=(64, 64))
    (folder / "red" / "truncated.jpg").write_bytes(good_jpeg[: len(good_jpeg) // 2])
    Image.new("1", (20000, 20000)).save(folder / "blue" / "bomb.png")
    Image.new("RGB", (1, 1), (0, 0, 255)).save(folder / "blue" / "tiny.png")
    Image.new("RGB", (10000, 10), (0, 0, 255)).save(folder / "blue" / "wide.png")
    (folder / "blue" / "été 猫.png").write_bytes(image_bytes((0, 0, 255)))
    (folder / "blue").joinpath(bytes.fromhex("6361ff2e706e67").decode("utf-8", "surrogateescape")).write_bytes(
        image_bytes((0, 0, 255)))
    outside = roots.parent / "secret.png"
    outside.write_bytes(image_bytes((0, 0, 255)))
    (folder / "blue" / "link.png").symlink_to(outside)
    job = built(create(client, source="folder", train_folder=str(folder), width=4, height=4, val_percent=0).json()["id"])
    info = manifest(job)
    assert info["splits"]["train"]["per_class"] == [6, 2]  # blue: 2 + tiny + wide + unicode + non-UTF-8
    reasons = {entry["path"].rsplit("/", 1)[1]: entry["reason"] for entry in
               json.loads((job.folder / "dataset" / "skipped.json").read_text())}
    assert set(reasons) == {"text.jpg", "empty.png", "truncated.jpg", "bomb.png", "link.png"}
    assert reasons["link.png"] == "a link to a file outside the folders this server may read"
    assert "not an image" in reasons["text.jpg"]
    assert "empty" in reasons["empty.png"]
    assert "truncated" in reasons["truncated.jpg"]
    assert "bomb" in reasons["bomb.png"]
    assert info["skipped"]["per_class"] == {"red": {"train": 3}, "blue": {"train": 2}}


def test_min_and_max_per_class(client, roots, worker):
    class_folders(roots / "s", {"red": 10, "green": 1, "blue": 3})
    job = built(create(client, source="folder", train_folder=str(roots / "s"), width=2, height=2, val_percent=0,
                       min_per_class=2, max_per_class=4).json()["id"])
    info = manifest(job)
    assert info["classes"] == ["blue", "red"]
    assert info["splits"]["train"]["per_class"] == [3, 4]
    assert any("'green' has 1 file(s)" in w for w in info["warnings"])


def test_an_empty_result_fails_with_a_clear_message(client, roots, worker):
    folder = roots / "junk" / "a"
    folder.mkdir(parents=True)
    (folder / "x.png").write_text("text")
    (folder / "y.png").write_text("text")
    job = built(create(client, source="folder", train_folder=str(roots / "junk"), val_percent=0).json()["id"],
                Status.FAILED)
    assert "None of the 2 files could be used as an image" in job.error
    assert not (job.folder / "dataset").exists() and not (job.folder / "dataset.partial").exists()


def test_folders_outside_the_roots_are_refused(client, roots, tmp_path):
    response = create(client, source="folder", train_folder=str(tmp_path))
    assert response.status_code == 400
    assert "not inside the folders this server may read" in response.json()["errors"]["train_folder"][0]["message"]
    assert client.get("/api/folders?path=/etc").status_code == 403
    nul = client.get("/api/folders?path=a%00b")
    assert nul.status_code == 400 and nul.json()["error"] == nulbytes.MESSAGE, "refused before the view"
    with pytest.raises(folders.OutsideRoots, match="is not a name a folder on this server can have"):
        folders.allowed("a\x00b")
    listing = client.get("/api/folders").json()
    assert [f["path"] for f in listing["folders"]][0] == "imports", "a root by its label"


@pytest.mark.parametrize("keep", [False, True])
def test_an_uploaded_archive_with_train_and_test_folders(client, roots, worker, tmp_path, keep):
    class_folders(tmp_path / "src" / "train", {"red": 4, "blue": 4})
    class_folders(tmp_path / "src" / "test", {"red": 1, "blue": 2})
    archive = tar_of(tmp_path / "src", tmp_path / "upload.tar.gz", arcroot="wrapped")
    kept = {"keep_upload": "on"} if keep else {}  # left out: the page's default, not kept
    with open(archive, "rb") as handle:
        response = client.post("/api/datasets", {"name": "from tar", "source": "archive", "archive": handle,
                                                 "width": 4, "height": 4, "val_percent": 25, "test_percent": 0,
                                                 "image_type": "color", "resize_mode": "squash", "min_per_class": 1,
                                                 "encoding": "png", "quality": 90, "seed": 1, **kept})
    assert response.status_code == 201, response.json()
    job = built(response.json()["id"])
    info = manifest(job)
    assert info["splits"]["train"]["count"] == 6 and info["splits"]["val"]["count"] == 2
    assert info["splits"]["test"]["per_class"] == [2, 1]
    assert [p.name for p in (job.folder / "upload").iterdir()] == (["archive.tar.gz"] if keep else [])
    assert not (job.folder / "dataset" / "extracted").exists()
    assert ("Archive kept", "yes" if keep else "no") in dict(kinds.settings_table(job))["Source"]
    detail = client.get(f"/api/datasets/{job.pk}").json()
    assert str(conf.DATA_DIR) not in json.dumps(detail) and "path" not in detail["params"]["source"]
    assert detail["manifest"]["options"]["source"] == {"type": "archive", "name": "upload.tar.gz"}
    modes = {p.relative_to(job.folder).as_posix(): oct(stat.S_IMODE(p.stat().st_mode))
             for p in job.folder.rglob("*") if p.is_file()}
    assert set(modes.values()) <= {"0o644", "0o640"}, modes

    cloned = client.post(f"/api/jobs/{job.pk}/clone")
    if not keep:
        assert cloned.status_code == 409
        assert cloned.json()["error"] == ("The file this job was made from (upload/archive.tar.gz) is gone, so it "
                                          "cannot be cloned; make a new dataset with the file.")
        return
    assert cloned.status_code == 201, cloned.json()
    assert client.delete(f"/api/jobs/{job.pk}").status_code == 204, "the clone has its own copy of the upload"
    clone = built(cloned.json()["id"])
    assert manifest(clone)["splits"]["train"]["count"] == 6
    assert [p.name for p in (clone.folder / "upload").iterdir()] == ["archive.tar.gz"]


def test_a_hostile_archive_fails_the_build_and_leaves_nothing(client, roots, worker, tmp_path):
    import tarfile

    evil = tmp_path / "evil.tar"
    with tarfile.open(evil, "w") as tar:
        info = tarfile.TarInfo("../../escape.png")
        data = image_bytes()
        info.size = len(data)
        import io

        tar.addfile(info, io.BytesIO(data))
    with open(evil, "rb") as handle:
        response = client.post("/api/datasets", {"name": "evil", "source": "archive", "archive": handle, "width": 4,
                                                 "height": 4, "val_percent": 25, "test_percent": 0, "image_type": "color",
                                                 "resize_mode": "squash", "min_per_class": 1, "encoding": "png",
                                                 "quality": 90, "seed": 1})
    job = built(response.json()["id"], Status.FAILED)
    assert "outside the destination" in job.error
    assert not (job.folder / "dataset").exists() and not (job.folder / "dataset.partial").exists()
    assert not (tmp_path / "escape.png").exists()
    assert (job.folder / "upload" / "archive.tar").is_file(), "a failed build keeps the upload for a retry"


def test_text_lists_with_a_prefix_and_labels(client, roots, worker):
    images = class_folders(roots / "imgs", {"red": 3, "blue": 3})
    (roots / "labels.txt").write_text("red\nblue\n")
    lines = [f"red/{n:03d}.png 0" for n in range(3)] + [f"blue/{n:03d}.png 1" for n in range(3)]
    (roots / "train.txt").write_text("\n".join(lines + ["/etc/passwd 0", "broken-line"]) + "\n")
    (roots / "val.txt").write_text("red/000.png 0\nblue/000.png 1\n")
    job = built(create(client, source="lists", train_list_path=str(roots / "train.txt"),
                       val_list_path=str(roots / "val.txt"), labels_file_path=str(roots / "labels.txt"),
                       prefix=str(images), width=2, height=2, min_per_class=1).json()["id"])
    info = manifest(job)
    assert info["classes"] == ["red", "blue"]
    assert info["splits"]["train"]["per_class"] == [3, 3] and info["splits"]["val"]["per_class"] == [1, 1]
    reasons = [e["reason"] for e in json.loads((job.folder / "dataset" / "skipped.json").read_text())]
    assert "outside the folders this server may read" in reasons
    assert any("not 'path label'" in r for r in reasons)


def test_the_dataset_page_gallery_and_deleting_a_dataset_a_model_uses(client, roots, worker, alice):
    class_folders(roots / "s", {"red": 3, "blue": 3})
    job = built(create(client, source="folder", train_folder=str(roots / "s"), width=4, height=4,
                       val_percent=0).json()["id"])
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Explore the images" in page and "chart-data" in page and "mean.png" in page
    gallery = client.get(f"/datasets/{job.pk}/explore?split=train&class=1&size=25").content.decode()
    assert gallery.count('<figure>') == 3
    png = client.get(f"/datasets/{job.pk}/images/train/0.png")
    assert png["Content-Type"] == "image/png"
    assert client.get(f"/datasets/{job.pk}/mean.png").status_code == 200
    assert client.get("/vendor/plotly.min.js").status_code == 200

    model = Job.objects.create(kind="sleep", name="uses it", owner=alice, params={"dataset": job.pk},
                               status=Status.DONE)
    assert client.delete(f"/api/jobs/{job.pk}").status_code == 204
    assert not job.folder.exists()
    model.refresh_from_db()
    assert model.lost_dependency_notices() == [f"Its dataset “{job.name}” (#{job.pk}) was deleted by alice."]


def test_the_resize_preview(client, roots):
    class_folders(roots / "s", {"red": 1})
    response = client.post("/datasets/preview", {"folder": str(roots / "s"), "width": 3, "height": 5,
                                                 "resize_mode": "crop", "image_type": "color"})
    assert response["Content-Type"] == "image/png"
    image = Image.open(io.BytesIO(response.content))
    assert image.size == (3, 5) and image.getpixel((1, 2)) == (255, 0, 0)
    refused = client.post("/datasets/preview", {"folder": "/etc", "width": 3, "height": 5})
    assert refused.status_code == 400 and "not inside" in refused.json()["error"]
    nothing = client.post("/datasets/preview", {"folder": "", "width": 3, "height": 5})
    assert nothing.status_code == 400 and "Choose an image" in nothing.json()["error"]


def test_the_preview_takes_an_upload_spooled_to_disk_and_refuses_a_too_large_one(client, tmp_path):
    # Over FILE_UPLOAD_MAX_MEMORY_SIZE, so it is spooled to a file and decoded from there.
    big = tmp_path / "big.png"
    Image.effect_noise((700, 700), 64).convert("RGB").save(big)
    with open(big, "rb") as image:
        answer = client.post("/datasets/preview", {"image": image, "width": 4, "height": 4, "image_type": "color"})
    assert answer.status_code == 200 and Image.open(io.BytesIO(answer.content)).size == (4, 4)
    huge = SimpleUploadedFile("huge.png", b"\0" * (8 * 2**20 + 1), content_type="image/png")
    refused = client.post("/datasets/preview", {"image": huge, "width": 4, "height": 4})
    assert refused.status_code == 400 and "up to 8 MiB" in refused.json()["error"]


def test_the_sample_dataset_is_made_offline(alice, worker, db_url):
    from django.core.management import call_command

    call_command("sample_dataset", "alice")
    job = built(Job.objects.get(kind="dataset").pk)
    info = manifest(job)
    assert info["classes"] == [str(d) for d in range(10)]
    assert sum(info["splits"][s]["count"] for s in ("train", "val", "test")) == 1797


def test_aborting_a_build_leaves_nothing_half_written(client, roots, worker, alice):
    from jobs import services
    from tests.processes import wait_for

    class_folders(roots / "many", {"red": 800, "blue": 800}, fmt="JPEG", size=(400, 300))
    job = Job.objects.get(pk=create(client, source="folder", train_folder=str(roots / "many"), width=256, height=256,
                                    encoding="png").json()["id"])
    wait_for(lambda: (job.folder / "dataset.partial").exists() and Job.objects.get(pk=job.pk).progress > 0,
             timeout=60, what="the build to be under way")
    services.abort(job, alice)
    job = wait_status(job, Status.ABORTED, timeout=30)
    assert not (job.folder / "dataset").exists() and not (job.folder / "dataset.partial").exists()


def test_uploaded_text_lists(client, roots, worker, tmp_path):
    images = class_folders(roots / "imgs", {"red": 2, "green": 2})
    (tmp_path / "labels.txt").write_text("green\nred\n")
    (tmp_path / "train.txt").write_text("red/000.png 1\nred/001.png 1\ngreen/000.png 0\ngreen/001.png 0\n")
    with open(tmp_path / "train.txt", "rb") as train, open(tmp_path / "labels.txt", "rb") as labels:
        response = client.post("/api/datasets", {
            "name": "lists", "source": "lists", "train_list": train, "labels_file": labels, "prefix": str(images),
            "shuffle": "on", "width": 2, "height": 2, "val_percent": 0, "test_percent": 0, "image_type": "color",
            "resize_mode": "squash", "min_per_class": 1, "encoding": "none", "quality": 90, "seed": 1})
    assert response.status_code == 201, response.json()
    job = built(response.json()["id"])
    assert manifest(job)["splits"]["train"]["per_class"] == [2, 2]
    assert (job.folder / "upload" / "train_list.txt").read_text().startswith("red/000.png 1")


def test_the_settings_show_the_users_names_and_no_server_path(client, roots, tmp_path):
    archive = tar_of(class_folders(tmp_path / "photos", {"red": 2, "blue": 2}), tmp_path / "mine.tar")
    with open(archive, "rb") as upload:
        answer = client.post("/api/datasets", {"name": "from tar", "source": "archive", "archive": upload})
    assert answer.status_code == 201, answer.content
    job = Job.objects.get(pk=answer.json()["id"])
    assert str(job.folder) in json.dumps(job.params), "the build needs where the upload was kept"
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    shown = json.dumps(client.get(f"/api/jobs/{job.pk}").json()["params"])
    for server_path in (str(roots), str(job.folder)):
        assert server_path not in page and server_path not in shown
    assert "<td>Archive</td><td>mine.tar</td>" in page


def test_a_file_that_is_not_the_archive_it_claims_is_refused_at_upload(client, roots, tmp_path):
    zeros = tmp_path / "zeros.zip"
    zeros.write_bytes(bytes(4 * 1024 * 1024))
    message = "Refused archive: 'zeros.zip' is not a zip or tar archive."
    with open(zeros, "rb") as upload:
        answer = client.post("/api/datasets", {"name": "zeros", "source": "archive", "archive": upload})
    assert answer.status_code == 400
    assert answer.json()["errors"]["archive"] == [{"message": message, "code": ""}]
    with open(zeros, "rb") as upload:
        page = client.post("/datasets/new/", {**defaults(), "name": "zeros", "source": "archive",
                                              "archive": upload})
    assert page.status_code == 400 and message in html.unescape(page.content.decode())
    assert not Job.objects.exists()


def test_no_answer_names_the_data_folder_or_a_roots_path(client, roots, worker, settings):
    """Users see a root by its label and paths below it relative to that:
    refusals, the folder browser, the dataset's settings and manifest."""
    class_folders(roots / "shapes", {"red": 2, "blue": 2})
    server_paths = (str(settings.DATA_DIR), str(roots))
    answers = [client.get("/api/folders?path=/etc").content, client.get("/api/folders").content,
               client.get("/api/folders?path=imports/shapes").content,
               create(client, source="folder", train_folder="/etc").content,
               create(client, source="lists", train_list_path="/etc/passwd", labels_file_path="/etc/hosts").content]
    for answer in answers:
        assert not any(path in answer.decode() for path in server_paths), answer
    listing = client.get("/api/folders?path=imports").json()
    assert listing["path"] == "imports" and [f["path"] for f in listing["folders"]] == ["imports/shapes"]
    response = create(client, source="folder", train_folder="imports/shapes", width=2, height=2, val_percent=0)
    assert response.status_code == 201, response.json()
    job = built(response.json()["id"])
    assert job.params["source"]["train"] == str(roots / "shapes"), "the build reads the server's path"
    shown = client.get(f"/api/datasets/{job.pk}").content.decode() + client.get(f"/api/jobs/{job.pk}").content.decode()
    assert not any(path in shown for path in server_paths), shown
    assert "imports/shapes" in shown


@pytest.mark.parametrize("skipped, more", [(500, 0), (501, 1)])
def test_the_page_lists_the_first_500_skipped_files_and_counts_the_rest(client, alice, skipped, more):
    """``SKIPPED_SHOWN`` (500): a report of 500 skipped files is listed
    whole; one more is listed to 500, with how many more and a link to it all."""
    job = uploaded_dataset_job(alice)
    manifest = make_dataset(job.folder / jobfiles.DATASET) / jobfiles.MANIFEST
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "options": job.params}))  # as the build records them
    report = [{"path": f"photos/red/{n:04d}.jpg", "class": "red", "split": "train", "reason": "not an image"}
              for n in range(skipped)]
    (job.folder / jobfiles.DATASET / jobfiles.SKIPPED).write_text(json.dumps(report))
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert page.count("photos/red/") == min(skipped, 500)
    assert ("photos/red/0499.jpg" in page) and ("photos/red/0500.jpg" not in page)
    assert (f"… and {more} more" in page) == bool(more)
    whole = client.get(f"/datasets/{job.pk}/skipped.json")
    assert whole.status_code == 200 and len(whole.json()) == skipped
