"""Browser libraries served by the app itself, so that pages need no CDN.

Plotly.js is the "strict" build of the version the pinned ``plotly`` package
ships (``digitslike/vendor/plotly-strict.min.js``, from plotly.js's own
``plotly.js-strict-dist-min`` release, MIT, its licence beside it): the
package's ordinary build compiles its WebGL shaders' code at run time
(``new Function``), which the site's Content-Security-Policy refuses
(no ``unsafe-eval``), so parallel coordinates and ``scattergl`` charts drew
"WebGL is not supported by your browser" instead. The strict build is the
same library without code made at run time. ``tests/digitslike`` checks that
its version is the one the installed package ships."""

from pathlib import Path

from django.http import FileResponse, HttpRequest

from web.files import streamed_asynchronously

WEEK_SECONDS = 7 * 24 * 3600
PLOTLY_STRICT = Path(__file__).with_name("vendor") / "plotly-strict.min.js"


def plotly_js(request: HttpRequest) -> FileResponse:
    response = streamed_asynchronously(request, FileResponse(open(PLOTLY_STRICT, "rb"), content_type="text/javascript"))
    response["Cache-Control"] = f"public, max-age={WEEK_SECONDS}"
    return response
