"""The browser libraries the app serves itself."""

import re
from importlib.util import find_spec
from pathlib import Path

from digitslike.vendor import PLOTLY
from tests.clients import signed_in


def _version(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        head = handle.read(200)
    return re.search(r"plotly\.js[^\n]* v(\d+\.\d+\.\d+)", head).group(1)


def test_plotly_is_the_strict_partial_build_of_the_version_the_pinned_package_ships():
    shipped = Path(find_spec("plotly").origin).parent / "package_data" / "plotly.min.js"
    assert _version(PLOTLY) == _version(shipped)
    text = PLOTLY.read_text(encoding="utf-8")
    assert "(strict, partial: scatter, scattergl, bar, heatmap, parcoords - minified)" in text[:200]
    assert "new Function" not in text and "unsafe-eval" not in text  # nothing the Content-Security-Policy refuses


def test_the_pages_draw_only_the_traces_the_build_holds():
    """Every trace type the pages' scripts name is one the partial build registers."""
    built = {"scatter", "scattergl", "bar", "heatmap", "parcoords"}
    root = Path(__file__).resolve().parents[2]
    named = set()
    for script in [*root.glob("static/**/*.js"), *root.glob("*/static/**/*.js")]:
        named |= set(re.findall(r'\btype: "(scatter\w*|bar\w*|heatmap\w*|parcoords|parcats|histogram\w*|box|violin|pie|'
                                r'contour\w*|surface|mesh3d|table|indicator|image|sankey|treemap|sunburst|funnel\w*|'
                                r'waterfall|candlestick|ohlc|splom|densitymap|choropleth\w*)"', script.read_text()))
    assert named and named <= built, named - built


def test_plotly_is_served_with_a_weeks_caching(alice):
    answer = signed_in(alice).get("/vendor/plotly.min.js")
    assert answer.status_code == 200 and answer["Content-Type"] == "text/javascript"
    assert "max-age=604800" in answer["Cache-Control"]
    body = b"".join(answer.streaming_content)
    assert body == PLOTLY.read_bytes()
