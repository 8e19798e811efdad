from django.apps import AppConfig
from django.urls import reverse

from jobs import groups, periodic
from jobs.kinds import Category, JobKind, register, register_category
from trainer.jobfiles import LAST_CHECKPOINT


def group_page(owner: str, group: str) -> str:
    """Every group's page is the compare-curves page, whatever kinds of job it holds."""
    return reverse("group", args=[owner, group])


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from .command import train_command
        from .modeljobs import MODEL_KIND
        from .modelsettings import public_params, settings_table
        from .runsummary import keep_summary
        from .searches import advance_all
        from .services import runs_code
        from .sparkline import SPARKLINE
        from .views import page_context

        register_category(Category("models", "Models", order=20, group_link="compare curves", counted=(MODEL_KIND,)))
        register(JobKind(MODEL_KIND, "Model", "models", train_command,
                         page_template="training/section.html", page_context=page_context,
                         new_page="new-model", create_endpoint="api-models", resume_file=LAST_CHECKPOINT,
                         sparkline=SPARKLINE, public_params=public_params, settings=settings_table,
                         required_permission=runs_code, ended=keep_summary))
        groups.register_page(group_page)
        periodic.register(advance_all)
