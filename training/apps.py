from django.apps import AppConfig

from jobs.kinds import Category, JobKind, register, register_category
from trainer.jobfiles import LAST_CHECKPOINT


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from .command import train_command
        from .summary import summary_extra
        from .views import page_context

        register_category(Category("models", "Models", order=20, group_link="compare curves"))
        register(JobKind("train", "Model", "models", train_command,
                         page_template="training/section.html", page_context=page_context,
                         new_page="new-model", create_endpoint="api-models", resume_file=LAST_CHECKPOINT,
                         summary_extra=summary_extra))
