"""In a real browser: a dataset from an uploaded archive, its chart and gallery;
a mistake in the form is refused before the archive is stored."""

from django.conf import settings

from datasets.forms import LIST_FIELDS
from jobs.models import Job
from tests.browser import needs_chromium, sign_up

pytestmark = needs_chromium

# The names of the form fields the page sends, in order.
RECORD_SENT_NAMES = """() => {
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (body) {
    window.sentNames = [...body.keys()];
    return send.call(this, body);
  };
}"""


def test_a_dataset_from_an_uploaded_archive_shows_its_chart_and_gallery(page, refusals, worker, tmp_path):
    from playwright.sync_api import expect

    from tests.datasetfiles import class_folders, tar_of

    class_folders(tmp_path / "src", {"red": 6, "green": 6, "blue": 6})
    (tmp_path / "src" / "red" / "notes.txt").write_text("not an image")
    archive = tar_of(tmp_path / "src", tmp_path / "colours.tar.gz")
    sign_up(page, "ada")
    page.click("text=New dataset")
    page.fill("#id_name", "colours")
    page.select_option("#id_source", "archive")
    page.set_input_files("#id_archive", str(archive))
    page.fill("#id_width", "16")
    page.fill("#id_height", "16")
    page.set_input_files("#preview-file", str(tmp_path / "src" / "red" / "000.png"))
    expect(page.locator("#preview-image")).to_be_visible()

    refusals.add("/datasets/new/")
    page.evaluate(RECORD_SENT_NAMES)
    page.fill("#id_val_percent", "60")
    page.fill("#id_test_percent", "50")
    page.click("text=Create dataset")
    expect(page.locator("[data-field=val_percent] .errors")).to_have_text(
        "Validation and test together must leave some images for training.")
    # The fields go first, so the server refuses them before it reads the archive.
    names = page.evaluate("window.sentNames")
    assert "test_percent" in names and set(names[names.index("archive"):]) <= {"archive", *LIST_FIELDS}
    uploads = settings.DATA_DIR / "uploads"
    assert not Job.objects.exists() and (not uploads.exists() or not any(uploads.iterdir()))

    page.fill("#id_test_percent", "0")
    page.fill("#id_val_percent", "25")
    page.click("text=Create dataset")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#status")).to_have_text("Done", timeout=60_000)
    expect(page.locator("#class-chart .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator("#split-counts")).to_contain_text("train")
    expect(page.locator("#mean-image")).to_be_visible()
    expect(page.locator("#skipped")).to_contain_text("red/notes.txt")
    shown = page.locator("body").inner_text() + page.content()
    assert str(tmp_path) not in shown and "dataset.partial" not in shown
    page.click("text=Explore the images")
    expect(page.locator("#gallery figure")).to_have_count(12)  # 18 images, 2 of each 6 for validation
    page.select_option("select[name=class]", label="green")
    page.click("text=Show")
    expect(page.locator("#gallery figcaption")).to_have_text(["green"] * 4)


def test_the_jpeg_quality_field_shows_only_for_jpeg(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    page.click("text=New dataset")
    quality = page.locator("#id_quality")
    expect(page.locator("#id_encoding")).to_have_value("png")
    expect(quality).to_be_hidden()
    page.select_option("#id_encoding", "jpeg")
    expect(quality).to_be_visible()
    page.select_option("#id_encoding", "none")
    expect(quality).to_be_hidden()
