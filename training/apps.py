from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from jobs.kinds import JobKind, register

        from .command import train_command
        from .views import page_context

        register(JobKind("train", "Model", "models", train_command,
                         page_template="training/section.html", page_context=page_context))
