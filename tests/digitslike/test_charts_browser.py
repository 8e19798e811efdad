"""In a real browser: live points reach a chart in batches, only while the
chart is on the screen of a shown page, and none is lost or doubled when it
comes back into view or is redrawn (static/js/charts.js)."""

import time

from tests.browser import needs_chromium, sign_up
from tests.processes import wait_for

pytestmark = needs_chromium

# Two charts of one trace each: one at the top of the page, one far below it.
SET_UP = """async () => {
  window.charts = await import("/static/js/charts.js");
  document.body.innerHTML = '<div id="top" style="height:200px"></div><div style="height:5000px"></div>'
    + '<div id="below" style="height:200px"></div>';
  for (const id of ["top", "below"]) {
    await Plotly.newPlot(id, [{ type: "scatter", x: [0], y: [0], customdata: [0] }], { height: 200 });
  }
}"""

ADD = """([id, first, count]) => {
  for (let i = first; i < first + count; i += 1) {
    charts.extend(document.getElementById(id), { x: [[i]], y: [[i * i]], customdata: [[i]] }, [0]);
  }
}"""

POINTS = "(id) => document.getElementById(id).data[0].x"

HIDE = """(hidden) => {
  Object.defineProperty(document, "hidden", { value: hidden, configurable: true });
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_points_reach_charts_on_the_screen_in_batches_and_the_others_when_they_come_into_view(page):
    sign_up(page, "ada")
    page.goto("/models/new/")
    page.evaluate(SET_UP)

    page.evaluate(ADD, ["top", 1, 3])
    page.evaluate(ADD, ["below", 1, 3])
    assert page.evaluate(POINTS, "top") == [0], "drawn at once: a batch waits for its moment"
    wait_for(lambda: page.evaluate(POINTS, "top") == [0, 1, 2, 3], timeout=10, what="the batch on the screen")
    time.sleep(2.5)  # a batch later still
    assert page.evaluate(POINTS, "below") == [0], "a chart below the screen was drawn"

    page.evaluate("document.getElementById('below').scrollIntoView()")
    wait_for(lambda: page.evaluate(POINTS, "below") == [0, 1, 2, 3], timeout=10, what="the chart that came into view")
    assert page.evaluate("(id) => document.getElementById(id).data[0].customdata", "below") == [0, 1, 2, 3]

    page.evaluate(HIDE, True)
    page.evaluate(ADD, ["below", 4, 2])
    time.sleep(2.5)
    assert page.evaluate(POINTS, "below") == [0, 1, 2, 3], "a hidden page drew a chart"
    page.evaluate(HIDE, False)
    wait_for(lambda: page.evaluate(POINTS, "below") == [0, 1, 2, 3, 4, 5], timeout=10, what="the page shown again")


def test_a_chart_redrawn_with_its_points_takes_none_of_them_twice(page):
    sign_up(page, "ada")
    page.goto("/models/new/")
    page.evaluate(SET_UP)
    page.evaluate(ADD, ["top", 1, 2])
    page.evaluate("""() => charts.plot(document.getElementById("top"),
      [{ type: "scatter", x: [0, 1, 2], y: [0, 1, 4], customdata: [0, 1, 2] }], { height: 200 })""")
    page.evaluate(ADD, ["top", 3, 1])
    wait_for(lambda: page.evaluate(POINTS, "top") == [0, 1, 2, 3], timeout=10, what="the point after the redraw")
    time.sleep(2.5)
    assert page.evaluate(POINTS, "top") == [0, 1, 2, 3]


def test_a_chart_that_keeps_its_last_points_keeps_as_many_of_a_long_batch(page):
    sign_up(page, "ada")
    page.goto("/models/new/")
    page.evaluate(SET_UP)
    page.evaluate("""() => { for (let i = 1; i <= 10; i += 1) {
      charts.extend(document.getElementById("below"), { x: [[i]], y: [[i]] }, [0], 4); } }""")
    page.evaluate("document.getElementById('below').scrollIntoView()")
    wait_for(lambda: page.evaluate(POINTS, "below") == [7, 8, 9, 10], timeout=10, what="the last 4 points")
