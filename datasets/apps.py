from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class DatasetsConfig(AppConfig):
    name = "datasets"

    def ready(self) -> None:
        from digitslike.bodylimit import allow_large_bodies
        from jobs.kinds import JobKind, python_module, register

        from .views import page_context

        register(JobKind("dataset", "Dataset", "datasets", python_module("trainer.dataset_build"),
                         page_template="datasets/section.html", page_context=page_context))
        allow_large_bodies("new-dataset", "api-datasets")
        Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
        for root in settings.DATASET_ROOTS:
            if root.startswith(str(settings.DATA_DIR)):
                Path(root).mkdir(parents=True, exist_ok=True)
