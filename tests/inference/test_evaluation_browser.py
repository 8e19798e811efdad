"""A real browser on an evaluation's report: the accuracies and the
confusion matrix appear, and clicking a cell shows that cell's images; then
Compare on the model's group page fills in its accuracy."""


import pytest
from django.contrib.auth.models import User

from jobs.models import Status
from tests.browser import needs_chromium, sign_up
from tests.evalfiles import evaluated_split, imports, submit_list, trained_model, write_bars
from tests.jobtools import wait_status

pytestmark = needs_chromium

CELL_CENTRE = """([row, column]) => {
  const chart = document.getElementById("confusion-chart");
  chart.scrollIntoView({ block: "center" });
  const layout = chart._fullLayout, box = chart.getBoundingClientRect();
  return [box.left + layout.xaxis._offset + layout.xaxis.l2p(column),
          box.top + layout.yaxis._offset + layout.yaxis.l2p(row)];
}"""


@pytest.mark.one_database
def test_clicking_a_confusion_matrix_cell_shows_its_images(page, worker):  # noqa: F811
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    model = trained_model(owner, group="sweep")
    paths = write_bars(imports() / "browser", [0, 1, 2, 3, 0])
    labels = ["horizontal", "vertical", "diagonal", "antidiagonal", "vertical"]  # the last one mislabelled
    text = "".join(f"{path} {label}\n" for path, label in zip(paths, labels, strict=True))
    evaluation = submit_list(owner, model, text)
    evaluation = wait_status(evaluation, Status.DONE, Status.FAILED, timeout=120)
    assert evaluation.status == Status.DONE, evaluation.error

    page.goto(f"/jobs/{evaluation.pk}/")
    expect(page.locator("#evaluation-summary")).to_contain_text("80.0%")
    expect(page.locator("#evaluation-summary")).not_to_contain_text("Top-5")
    expect(page.locator("#confusion-chart .heatmaplayer")).to_have_count(1)
    expect(page.locator("#mistakes-images figure")).to_have_count(1)
    expect(page.locator("#rows-table tbody tr")).to_have_count(5)

    x, y = page.evaluate(CELL_CENTRE, [1, 0])  # true vertical, predicted horizontal
    page.mouse.click(x, y)
    expect(page.locator("#cell-title")).to_have_text("True vertical, predicted horizontal: 1 image(s)")
    figure = page.locator("#cell-images figure")
    expect(figure).to_have_count(1)
    assert page.evaluate("document.querySelector('#cell-images img').naturalWidth") == 28
    assert str(imports()) not in figure.locator("img").get_attribute("src")

    page.wait_for_timeout(500)  # plotly takes two clicks within 300 ms for a double click, which resets the axes
    x, y = page.evaluate(CELL_CENTRE, [2, 2])
    page.mouse.click(x, y)
    expect(page.locator("#cell-title")).to_have_text("True diagonal, predicted diagonal: 1 image(s)")
    page.select_option("#filter-outcome", "wrong")
    expect(page.locator("#rows-table tbody tr")).to_have_count(1)

    page.goto("/groups/ada/sweep/")
    page.click("#compare-button")
    page.wait_for_url("**/groups/ada/sweep/#compare")
    expect(page.locator("#compare-table tbody tr")).to_have_count(1)
    expect(page.locator("#compare-table td.status")).to_have_text("Done", timeout=60_000)
    expect(page.locator("#compare-table td.top1")).to_contain_text("%")


def test_the_mistakes_are_paged_with_their_captions_in_full_and_the_matrix_shows_its_counts(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    evaluation = evaluated_split(User.objects.get(username="ada"), mistakes=49)
    page.goto(f"/jobs/{evaluation.pk}/")
    figures = page.locator("#mistakes-images figure")
    expect(figures).to_have_count(48)
    expect(page.locator("#mistakes-where")).to_have_text("page 1 of 2")
    expect(figures.first.locator("figcaption")).to_have_text("true horizontalpredicted vertical (99.0%)")
    assert page.evaluate("""() => [...document.querySelectorAll('#mistakes-images figcaption')]
        .every((caption) => caption.scrollWidth <= caption.clientWidth)"""), "no caption is cut off"
    page.click("#mistakes-next")
    expect(figures).to_have_count(1)
    expect(page.locator("#mistakes-where")).to_have_text("page 2 of 2")
    expect(page.locator("#mistakes-next")).to_be_disabled()

    counts = page.locator("#confusion-chart .heatmaplayer text")
    expect(counts).to_have_count(16)
    expect(counts.nth(1)).to_have_text("13")  # true horizontal, predicted vertical
    darkest = page.evaluate("""() => {
      const trace = document.getElementById("confusion-chart")._fullData[0];
      return trace.colorscale[trace.colorscale.length - 1][1];
    }""")
    assert darkest == "#08306b", "the largest count is drawn darkest"
