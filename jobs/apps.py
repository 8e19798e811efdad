from importlib import import_module

from django.apps import AppConfig
from django.conf import settings


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import kinds  # noqa: F401  registers the built-in kinds

        for module in settings.JOB_KINDS_MODULES:
            import_module(module)
