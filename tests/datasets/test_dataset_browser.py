"""In a real browser: a dataset from an uploaded archive, its chart and gallery."""



from tests.browser import needs_chromium, sign_up

pytestmark = needs_chromium


def test_a_dataset_from_an_uploaded_archive_shows_its_chart_and_gallery(page, worker, tmp_path):
    from playwright.sync_api import expect

    from tests.datasetfiles import class_folders, tar_of

    class_folders(tmp_path / "src", {"red": 6, "green": 6, "blue": 6})
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
    page.click("text=Create dataset")
    page.wait_for_url("**/jobs/*/")
    expect(page.locator("#status")).to_have_text("Done", timeout=60_000)
    expect(page.locator("#class-chart .main-svg").first).to_be_visible(timeout=20_000)
    expect(page.locator("#split-counts")).to_contain_text("train")
    expect(page.locator("#mean-image")).to_be_visible()
    page.click("text=Explore the images")
    expect(page.locator("#gallery figure")).to_have_count(12)  # 18 images, 2 of each 6 for validation
    page.select_option("select[name=class]", label="green")
    page.click("text=Show")
    expect(page.locator("#gallery figcaption")).to_have_text(["green"] * 4)
