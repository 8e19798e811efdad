"""The inference app's part of the API description, in the order the
features were first described: evaluations (with classify many and
Compare), classify one, model archives. Each feature describes its own
routes in its ``openapi``."""

from typing import Any

from .classify import openapi as classify
from .evaluate import openapi as evaluate
from .export import openapi as export

PATHS: dict[str, Any] = {**evaluate.PATHS, **classify.PATHS, **export.PATHS}
