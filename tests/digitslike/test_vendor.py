"""The browser libraries the app serves itself."""

import re
from importlib.util import find_spec
from pathlib import Path

from digitslike.vendor import PLOTLY_STRICT
from tests.clients import signed_in


def _version(path: Path) -> str:
    with open(path, encoding="utf-8") as handle:
        head = handle.read(200)
    return re.search(r"plotly\.js[^\n]* v(\d+\.\d+\.\d+)", head).group(1)


def test_plotly_is_the_strict_build_of_the_version_the_pinned_package_ships():
    shipped = Path(find_spec("plotly").origin).parent / "package_data" / "plotly.min.js"
    assert _version(PLOTLY_STRICT) == _version(shipped)
    assert "(strict - minified)" in PLOTLY_STRICT.read_text(encoding="utf-8")[:200]


def test_plotly_is_served_with_a_weeks_caching(alice):
    answer = signed_in(alice).get("/vendor/plotly.min.js")
    assert answer.status_code == 200 and answer["Content-Type"] == "text/javascript"
    assert "max-age=604800" in answer["Cache-Control"]
    body = b"".join(answer.streaming_content)
    assert body == PLOTLY_STRICT.read_bytes()
