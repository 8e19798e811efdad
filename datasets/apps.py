from pathlib import Path

from django.apps import AppConfig
from django.conf import settings

from jobs.kinds import Category, JobKind, python_module, register, register_category
from trainer.jobfiles import CONFIG


class DatasetsConfig(AppConfig):
    name = "datasets"

    def ready(self) -> None:
        from web.bodylimit import allow_large_bodies
        from web.fieldsfirst import check_fields_first

        from . import api, views
        from .datasetsettings import public_params, settings_table
        from .services import models_using

        register_category(Category("datasets", "Datasets", order=10))
        register(JobKind("dataset", "Dataset", "datasets", python_module("trainer.dataset_build"),
                         page_template="datasets/section.html", page_context=views.page_context,
                         new_page="new-dataset", create_endpoint="api-datasets", dependents=models_using,
                         public_params=public_params, settings=settings_table,
                         # A failed build (a full disk, say) runs again from its
                         # source, which it keeps (an upload is deleted only once built).
                         resume_file=CONFIG))
        allow_large_bodies("new-dataset", "api-datasets")
        check_fields_first(views.early_refusal, "new-dataset")
        check_fields_first(api.early_refusal, "api-datasets")
        Path(settings.FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
        for root in settings.DATASET_ROOTS:
            if root.startswith(str(settings.DATA_DIR)):
                Path(root).mkdir(parents=True, exist_ok=True)
