from typing import Any

from django.apps import AppConfig

from jobs.kinds import Category, JobKind, python_module, register, register_category, without


def model_of(params: dict[str, Any]) -> Any:
    """The model whose network an evaluation or an export builds (``JobKind.network_of``)."""
    return params.get("model")


class InferenceConfig(AppConfig):
    name = "inference"

    def ready(self) -> None:
        from . import exports
        from .views import page_context, summary_extra

        register_category(Category("evaluations", "Evaluations", order=25))
        register(JobKind("evaluation", "Evaluation", "evaluations", python_module("trainer.inference.job"),
                         page_template="inference/section.html", page_context=page_context,
                         new_page="new-evaluation", create_endpoint="api-evaluations", summary_extra=summary_extra,
                         # the model's folder and the allowed roots are the server's business
                         public_params=without("model_dir", "roots", "archive_limits"), network_of=model_of))
        # A model archive is listed with the models; it is made from a model's page or its API.
        register(JobKind(exports.KIND, "Model archive", "models", python_module("trainer.export_job"),
                         page_template="inference/export_section.html", page_context=exports.page_context,
                         network_of=model_of))
