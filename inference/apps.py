from typing import Any

from django.apps import AppConfig

from jobs.kinds import Category, JobKind, python_module, register, register_category, without
from trainer.gpulease import HOLDER_PREFIX


def model_of(params: dict[str, Any]) -> Any:
    """The model whose network an evaluation or an export builds (``JobKind.network_of``)."""
    return params.get("model")


def model_server(holder: str) -> dict[str, str] | None:
    """The model server as a device's holder on the resources page, when it
    leases a GPU it runs Classify one on (``jobs.resources.register_holder``)."""
    if not holder.startswith(HOLDER_PREFIX):
        return None
    return {"name": "Model server (Classify one)", "owner": f"pid {holder.removeprefix(HOLDER_PREFIX)}"}


class InferenceConfig(AppConfig):
    name = "inference"

    def ready(self) -> None:
        from jobs import resources

        from .evaluate.views import page_context, summary_extra
        from .export import services as exports

        register_category(Category("evaluations", "Evaluations", order=25))
        register(JobKind("evaluation", "Evaluation", "evaluations", python_module("trainer.inference.job"),
                         page_template="inference/section.html", page_context=page_context,
                         new_page="new-evaluation", create_endpoint="api-evaluations", summary_extra=summary_extra,
                         # the model's folder and the allowed roots are the server's business
                         public_params=without("model_dir", "roots", "archive_limits"), network_of=model_of))
        resources.register_holder(model_server)
        # A model archive is listed with the models; it is made from a model's page or its API.
        register(JobKind(exports.KIND, "Model archive", "models", python_module("trainer.export_job"),
                         page_template="inference/export_section.html", page_context=exports.page_context,
                         network_of=model_of))
