"""In a real browser: the home page's filter, sort, groups and bulk actions."""


import re

from django.contrib.auth.models import User

from jobs import services
from jobs.models import Job
from tests.browser import needs_chromium, sign_up

pytestmark = needs_chromium


def test_the_home_page_filters_sorts_collapses_and_acts_on_a_selection(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    for name, group in [("beta", "sweep"), ("alpha", "sweep"), ("gamma", "")]:
        services.submit(owner, "sleep", name, {"steps": 1}, {"device": "cpu", "count": 1}, group=group)
    other = User.objects.create_user("bob", password="correct horse battery")
    services.submit(other, "sleep", "delta", {"steps": 1}, {"device": "cpu", "count": 1}, group="sweep")
    page.goto("/?tab=checks")
    rows = page.locator("#jobs-table tr[data-job]")
    expect(rows).to_have_count(4)

    page.fill("#filter", "gam")
    expect(rows).to_have_count(1)
    page.fill("#filter", "")
    ada_sweep = page.locator("tbody[data-group=sweep][data-owner=ada] tr[data-job] td:nth-child(2)")
    page.click("th[data-sort=name]")
    expect(ada_sweep).to_have_text(["alpha", "beta"])
    page.click("th[data-sort=name]")
    expect(ada_sweep).to_have_text(["beta", "alpha"])
    expect(page.locator("tbody[data-group=sweep][data-owner=bob] tr[data-job] td:nth-child(2)")).to_have_text(["delta"])

    page.click("text=sweep · ada (2)")
    expect(rows).to_have_count(2)
    page.click("text=sweep · ada (2)")
    expect(rows).to_have_count(4)

    page.check("[aria-label='Select alpha']")
    page.check("[aria-label='Select gamma']")
    page.click("#abort-selected")
    expect(page.locator("#bulk-result")).to_have_text("Aborted 2 job(s).")
    expect(page.locator("tr", has_text="alpha").locator("td.status")).to_have_text("Aborted")
    expect(page.locator("tr", has_text="beta").locator("td.status")).to_have_text("Queued · #1 in queue")

    page.on("dialog", lambda dialog: dialog.accept())
    page.check("[aria-label='Select alpha']")
    page.click("#delete-selected")
    expect(page.locator("#bulk-result")).to_have_text("Deleted 1 job(s).")
    expect(rows).to_have_count(3)
    assert set(Job.objects.values_list("name", flat=True)) == {"beta", "gamma", "delta"}


# The distinct lines each tab's text takes.
TAB_LINES = """() => [...document.querySelectorAll("[role=tab]")].map((tab) => {
  const range = document.createRange();
  range.selectNodeContents(tab);
  return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
})"""


def test_the_tabs_keep_to_one_line_and_the_models_tab_counts_only_models(page):
    from playwright.sync_api import expect

    from tests.evalfiles import model_with_snapshot

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    model = model_with_snapshot(owner)
    Job.objects.create(kind="export", name=f"{model.name} archive", owner=owner, params={"model": model.pk},
                       resources={"device": "cpu", "count": 1})
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto("/?tab=models")
    expect(page.locator("#jobs-table tr[data-job]")).to_have_count(2)
    expect(page.locator("[role=tab][data-tab=models] .count")).to_have_text("1")
    assert page.evaluate(TAB_LINES) == [1] * page.locator("[role=tab]").count()
    served = page.request.get("/").text()
    assert re.search(r'data-tab="models"[^>]*>Models <span class="count">1</span>', served)


def test_a_kinds_rows_draw_the_sparkline_its_registration_names_and_extend_it_live(page):
    from playwright.sync_api import expect

    from jobs.publish import publish

    sign_up(page, "ada")
    job = Job.objects.create(kind="probe", name="lined", owner=User.objects.get(username="ada"),
                             params={"line": [3.0, 2.0, 1.5]}, resources={"device": "cpu", "count": 1})
    page.goto("/?tab=probes")
    line = page.locator(f"tr[data-job='{job.pk}'] svg.sparkline")
    expect(line).to_have_attribute("aria-label", "probe line, latest 1.500")
    expect(line.locator("title")).to_have_text("probe line: 1.500 (lowest 1.500)")
    publish(job, "progress", {"progress": 0.25})
    expect(line).to_have_attribute("aria-label", "probe line, latest 0.2500")
    assert len(line.locator("polyline").get_attribute("points").split()) == 4
