"""The inference app's part of the API description, in the order the
features were first described: evaluations (with classify many and
Compare), classify one, model archives, detect one, segment one. Each feature describes its own
routes in its ``openapi``."""

from typing import Any

from .classify import openapi as classify
from .detect import openapi as detect
from .evaluate import openapi as evaluate
from .export import openapi as export
from .segment import openapi as segment

PATHS: dict[str, Any] = {**evaluate.PATHS, **classify.PATHS, **export.PATHS, **detect.PATHS, **segment.PATHS}
