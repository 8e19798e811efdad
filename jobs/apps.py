from importlib import import_module

from django.apps import AppConfig
from django.conf import settings
from django.core import checks

from . import kinds


class JobsConfig(AppConfig):
    name = "jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(kinds.check_categories)
        for module in settings.JOB_KINDS_MODULES:
            import_module(module)
