"""A real browser on the New evaluation page: for a detector it offers only
the sources and options its task takes (no text list; a score threshold and
a label format) with its task's words for the labels, and switching to a
classifier brings the list back and hides the detector's options."""

import pytest
from django.contrib.auth.models import User

from tests.browser import needs_chromium, sign_up
from tests.detectionfiles import copied_detector, train_detector_once
from tests.evalfiles import model_with_snapshot

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_detector_once(tmp_path_factory.mktemp("detector"))


def test_the_page_offers_each_models_task_its_own_sources_and_options(page, trained):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    detector, classifier = copied_detector(owner, trained), model_with_snapshot(owner)
    page.goto(f"/evaluations/new/?model={detector.pk}")
    source = page.locator("#id_source")
    expect(source.locator('option[value="list"]')).to_be_disabled()
    expect(source).not_to_have_value("list")
    expect(page.locator("#id_score_threshold")).to_be_visible()
    expect(page.locator("#id_label_format")).to_be_visible()
    expect(page.locator("#id_folder_helptext")).to_contain_text("KITTI, Pascal VOC, COCO JSON or YOLO")

    page.select_option("#id_model", str(classifier.pk))
    expect(source.locator('option[value="list"]')).to_be_enabled()
    expect(page.locator("#id_score_threshold")).to_be_hidden()
    expect(page.locator("#id_label_format")).to_be_hidden()
    expect(page.locator("#id_folder_helptext")).to_contain_text("subfolders named after the model's classes")
