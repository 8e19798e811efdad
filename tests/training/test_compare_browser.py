"""In a real browser: the Compare page (its table sorted, filtered and
brushed by the parallel coordinates, the overlaid curves named by what
differs, the scatter) and the ways to it from the home page and the group
page. Events are written by hand, as the trainer would; no worker runs."""

import pytest
from django.contrib.auth.models import User

from jobs.models import Job, Status
from tests.browser import needs_chromium, sign_up
from trainer import eventkinds as kinds
from trainer import eventlog

pytestmark = needs_chromium

PARAMS = {"dataset": 1, "network": {"source": "standard", "name": "lenet"}, "epochs": 4, "lr": 0.01,
          "batch_size": 64, "solver": "sgd"}
# name, lr, batch_size, the top-1 it ends at
RUNS = [("slow", 0.001, 64, 0.62), ("steady", 0.01, 64, 0.81), ("fast", 0.1, 128, 0.93), ("wild", 1.0, 128, 0.4)]
ROWS = "#compare-table tbody tr:not([hidden])"


def train_job(owner, name, status=Status.DONE, group="", **params) -> Job:
    job = Job.objects.create(kind="train", name=name, group=group, owner=owner, params={**PARAMS, **params},
                             resources={"device": "cpu", "count": 1}, status=status)
    job.folder.mkdir(parents=True)
    return job


def record_training(job: Job, top1: float, epochs: int = 4) -> None:
    """A train loss each tenth of an epoch, a validation each epoch, rising to ``top1``."""
    for step in range(1, epochs * 10 + 1):
        eventlog.append(job.folder, kinds.TRAIN, kinds.train(step, step / 10, 2.0 / step, 0.01, 64, 1000.0, 0.1))
        if step % 10 == 0:
            epoch = step // 10
            metrics = {"loss": (1 - top1) / epoch, "top1": top1 * epoch / epochs, "top5": 0.99}
            eventlog.append(job.folder, kinds.VAL, kinds.val(step, float(epoch), metrics))


def sweep(owner, group="sweep") -> list[Job]:
    jobs = []
    for name, lr, batch_size, top1 in RUNS:
        job = train_job(owner, name, group=group, lr=lr, batch_size=batch_size)
        record_training(job, top1)
        jobs.append(job)
    return jobs


def open_compare(page, jobs) -> None:
    page.goto(f"/compare/?ids={','.join(str(job.pk) for job in jobs)}")
    page.locator("body[data-compare-ready]").wait_for(state="attached")


def names(page) -> list[str]:
    return page.locator(f"{ROWS} td:first-child").all_inner_texts()


def webgl_refused(page) -> bool:
    return page.locator("#compare-parallel-problem").is_visible()


def test_the_table_shows_what_differs_sorts_and_filters_and_the_charts_name_runs_by_it(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    jobs = sweep(User.objects.get(username="ada"))
    open_compare(page, jobs)

    expect(page.locator("#compare-shown")).to_have_text("4 of 4 runs shown")
    expect(page.locator("#compare-link")).to_have_attribute("href", f"/compare/?ids={'%2C'.join(str(j.pk) for j in jobs)}")
    headers = page.locator("#compare-table thead th[data-sort]")
    expect(headers.first).to_have_text("Name")
    settings_shown = page.locator("#compare-table thead tr:first-child th[rowspan]").all_inner_texts()
    assert [text.rstrip(" ▲▼") for text in settings_shown] == ["Name", "Owner", "Status", "lr", "batch_size"]
    page.check("#compare-all-settings")
    expect(page.locator("#compare-table thead th[data-sort='setting:solver']")).to_be_visible()
    expect(page.locator("#compare-table thead th[data-sort='setting:network.name']")).to_be_visible()
    page.uncheck("#compare-all-settings")
    expect(page.locator("#compare-table thead th[data-sort='setting:solver']")).to_have_count(0)

    assert names(page) == ["slow", "steady", "fast", "wild"]  # oldest first
    page.click("#compare-table th[data-sort='best:val_top1']")
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["wild", "slow", "steady", "fast"])
    page.click("#compare-table th[data-sort='best:val_top1']")
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["fast", "steady", "slow", "wild"])
    expect(page.locator(f"{ROWS}").first.locator("td.value").nth(1)).to_have_text("93.00%")
    page.click("#compare-table th[data-sort='setting:lr']")  # numerically, not as text
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["slow", "steady", "fast", "wild"])
    page.click("#compare-table th[data-sort='name']")
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["fast", "slow", "steady", "wild"])

    page.fill("#compare-filter", "stead")
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["steady"])
    expect(page.locator("#compare-shown")).to_have_text("1 of 4 runs shown")
    page.fill("#compare-filter", "128")  # a setting's value
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["fast", "wild"])
    page.fill("#compare-filter", "")
    expect(page.locator(ROWS)).to_have_count(4)

    legend = page.locator("#compare-curves-chart .legendtext")
    expect(legend).to_have_text(["lr 0.001, batch_size 64", "lr 0.01, batch_size 64", "lr 0.1, batch_size 128",
                                 "lr 1, batch_size 128"])
    page.select_option("#compare-curves-metric", "train_loss")  # not embedded: asked of the API
    expect(page.locator("#compare-curves-chart .scatterlayer .trace")).to_have_count(4)
    assert page.evaluate("document.getElementById('compare-curves-chart').data.every((t) => t.y.length > 0)")
    for chart in ("#compare-curves-chart", "#compare-scatter-chart"):
        expect(page.locator(f"{chart}.js-plotly-plot")).to_be_attached()
    expect(page.locator("#compare-scatter-chart .scatterlayer .point")).to_have_count(4)
    page.select_option("#compare-scatter-x", "batch_size")
    assert page.evaluate("document.getElementById('compare-scatter-chart').data[0].x") == [64, 64, 128, 128]

    # plotly takes the click on the layer above its points
    page.locator("#compare-scatter-chart .scatterlayer .point").nth(2).click(force=True)  # fast: its run opens
    page.wait_for_url(f"**/jobs/{jobs[2].pk}/")
    page.go_back()
    page.click("#compare-table a:text-is('wild')")
    page.wait_for_url(f"**/jobs/{jobs[3].pk}/")


def test_the_parallel_coordinates_draw_and_brushing_them_hides_the_rows_outside(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    jobs = sweep(User.objects.get(username="ada"))
    open_compare(page, jobs)
    assert not webgl_refused(page), "the page's WebGL charts were refused (plotly's strict build not served?)"

    chart = page.locator("#compare-parallel-chart")
    expect(page.locator("#compare-parallel-chart.js-plotly-plot")).to_be_attached()
    expect(chart.locator(".no-webgl")).to_have_count(0)
    labels = chart.locator(".axis-title").all_text_contents()
    assert labels == ["lr", "batch_size", "best validation top-1"]
    # lr spans 1000 times: drawn on log10, its ticks the real values
    dimension = page.evaluate("document.getElementById('compare-parallel-chart').data[0].dimensions[0]")
    assert dimension["values"] == pytest.approx([-3, -2, -1, 0])
    assert dimension["ticktext"] == ["0.001", "0.01", "0.1", "1"]

    page.evaluate("""Plotly.restyle(document.getElementById('compare-parallel-chart'),
                     {'dimensions[0].constraintrange': [[-2.5, -0.5]]})""")
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["steady", "fast"])
    expect(page.locator("#compare-shown")).to_have_text("2 of 4 runs shown")
    page.evaluate("""Plotly.restyle(document.getElementById('compare-parallel-chart'),
                     {'dimensions[2].constraintrange': [[0.85, 1]]})""")  # and a top-1 of 85% or more
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["fast"])
    page.fill("#compare-filter", "steady")  # the filter and the brush together
    expect(page.locator(ROWS)).to_have_count(0)
    page.fill("#compare-filter", "")

    page.hover("#compare-table tbody tr:not([hidden])")  # its line red, the others grey
    color = "document.getElementById('compare-parallel-chart').data[0].line.color"
    page.wait_for_timeout(200)
    assert page.evaluate(color) == [0, 0, 1, 0]
    page.hover("#compare-filter")
    page.wait_for_timeout(200)
    assert page.evaluate(color) != [0, 0, 1, 0]

    page.evaluate("""Plotly.restyle(document.getElementById('compare-parallel-chart'),
                     {'dimensions[0].constraintrange': [null], 'dimensions[2].constraintrange': [null]})""")
    expect(page.locator(ROWS)).to_have_count(4)


def test_many_runs_draw_their_curves_as_one_trace_without_a_legend(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    owner = User.objects.get(username="ada")
    jobs = []
    for n in range(60):
        job = train_job(owner, f"run {n}", lr=round(0.001 * (n + 1), 4))
        record_training(job, 0.5 + n / 200, epochs=2)
        jobs.append(job)
    open_compare(page, jobs)
    expect(page.locator("#compare-shown")).to_have_text("60 of 60 runs shown")
    curves = page.evaluate("""(() => { const chart = document.getElementById('compare-curves-chart');
        return { traces: chart.data.length, type: chart.data[0].type, nulls: chart.data[0].y.filter((v) => v === null).length,
                 legend: chart._fullLayout.showlegend, text: chart.data[0].text[0] }; })()""")
    assert curves["traces"] == 1 and curves["nulls"] == 60 and curves["legend"] is False
    assert curves["text"] == "lr 0.001"
    assert curves["type"] == "scattergl" and not webgl_refused(page)


def test_the_home_page_compares_the_selected_jobs_and_the_group_page_links_its_runs(page):
    from playwright.sync_api import expect

    sign_up(page, "ada")
    jobs = sweep(User.objects.get(username="ada"), group="lr sweep")
    page.goto("/?tab=models")
    expect(page.locator("#compare-selected")).to_be_disabled()
    page.check("[aria-label='Select fast']")
    page.check("[aria-label='Select slow']")
    expect(page.locator("#compare-selected")).to_be_enabled()
    page.click("#compare-selected")
    page.wait_for_url("**/compare/?ids=*")
    page.locator("body[data-compare-ready]").wait_for(state="attached")
    expect(page.locator(f"{ROWS} td:first-child")).to_have_text(["slow", "fast"])
    assert {int(part) for part in page.url.split("ids=")[1].replace("%2C", ",").split(",")} == {jobs[0].pk, jobs[2].pk}

    page.goto("/groups/ada/lr sweep/")
    expect(page.locator("#group-compare")).to_have_attribute("href", "/compare/?group=ada%2Flr%20sweep")
    page.click("text=Compare these runs")
    page.wait_for_url("**/compare/?group=*")
    page.locator("body[data-compare-ready]").wait_for(state="attached")
    expect(page.locator(ROWS)).to_have_count(4)
    expect(page.locator("#compare-link")).to_have_attribute("href", "/compare/?group=ada%2Flr+sweep")


def test_a_selection_it_cannot_show_says_why_and_draws_nothing(page, refusals):
    from playwright.sync_api import expect

    refusals.add("/compare/")
    sign_up(page, "ada")
    page.goto("/compare/?ids=twelve")
    expect(page.locator("p.flash.error")).to_contain_text("ids: give job numbers separated by commas")
    expect(page.locator(".js-plotly-plot")).to_have_count(0)
    expect(page.locator("#compare-table")).to_have_count(0)

    page.goto("/compare/?ids=999999")  # no such model: nothing to compare, said so
    expect(page.locator("p.flash.warning")).to_contain_text("nothing to compare")
    expect(page.locator("#compare-table")).to_have_count(0)
