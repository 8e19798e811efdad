"""Browser libraries served from their installed Python packages, so that
pages need no CDN and the version is the one pinned in requirements.txt."""

from importlib.util import find_spec
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.http import FileResponse, HttpRequest

from web.files import streamed_asynchronously

WEEK_SECONDS = 7 * 24 * 3600


def _package_file(package: str, *parts: str) -> Path:
    """A file shipped inside an installed package, found without importing it
    (importing plotly takes a sizeable fraction of a second)."""
    spec = find_spec(package)
    if spec is None or spec.origin is None:
        raise ImproperlyConfigured(f"{package} is not installed: see requirements.txt")
    return Path(spec.origin).parent.joinpath(*parts)


def plotly_js(request: HttpRequest) -> FileResponse:
    path = _package_file("plotly", "package_data", "plotly.min.js")
    response = streamed_asynchronously(request, FileResponse(open(path, "rb"), content_type="text/javascript"))
    response["Cache-Control"] = f"public, max-age={WEEK_SECONDS}"
    return response
