from typing import Any

from django.apps import AppConfig

from jobs.kinds import Category, JobKind, python_module, register, register_category


def model_of(params: dict[str, Any]) -> Any:
    """The model whose network a pretrained model made from its snapshot
    builds (``JobKind.network_of``); an upload's network is checked by the job."""
    source = params.get("source")
    return source.get("model") if isinstance(source, dict) and source.get("type") == "snapshot" else None


class PretrainedConfig(AppConfig):
    name = "pretrained"

    def ready(self) -> None:
        from web.bodylimit import allow_large_bodies

        # These import the job model, which exists only once apps are loaded.
        from .services import KIND, models_using
        from .views import page_context

        register_category(Category("pretrained", "Pretrained models", order=22))
        register(JobKind(KIND, "Pretrained model", "pretrained", python_module("trainer.pretrained_job"),
                         page_template="pretrained/section.html", page_context=page_context,
                         new_page="new-pretrained", create_endpoint="api-pretrained", dependents=models_using,
                         network_of=model_of))
        allow_large_bodies("new-pretrained", "api-pretrained")
