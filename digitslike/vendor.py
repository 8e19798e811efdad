"""Browser libraries served by the app itself, so that pages need no CDN.

Plotly.js (``digitslike/vendor/plotly.min.js``, MIT, its licence beside it)
is a partial, strict build of the version the pinned ``plotly`` package
ships, made by ``scripts/build_plotly.sh`` from plotly.js's own modules
(``vendor/plotly-build``):

- strict: the ordinary build compiles its WebGL shaders' code at run time
  (``new Function``), which the site's Content-Security-Policy refuses (no
  ``unsafe-eval``), so parallel coordinates and ``scattergl`` charts drew
  "WebGL is not supported by your browser"; the strict modules are the
  same traces without code made at run time;
- partial: the traces the pages draw (scatter, scattergl, bar, heatmap,
  parcoords), 1.9 MB where the whole library is 5.2 MB. Every page with a
  chart runs the file before it draws: the whole one took 1.5 s of a slow
  2-core machine's CPU on each page (Compare's first screen waited for it).

``tests/digitslike`` checks its version is the one the installed package
ships, and that it makes no code at run time."""

from pathlib import Path

from django.http import FileResponse, HttpRequest

from web.files import streamed_asynchronously

WEEK_SECONDS = 7 * 24 * 3600
PLOTLY = Path(__file__).with_name("vendor") / "plotly.min.js"


def plotly_js(request: HttpRequest) -> FileResponse:
    response = streamed_asynchronously(request, FileResponse(open(PLOTLY, "rb"), content_type="text/javascript"))
    response["Cache-Control"] = f"public, max-age={WEEK_SECONDS}"
    return response
