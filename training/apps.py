from django.apps import AppConfig

from jobs.kinds import Category, JobKind, register, register_category

# What an aborted or failed run leaves and a new run of the same job carries
# on from (the trainer's checkpoint.LAST in its checkpoints folder).
RESUME_FILE = "checkpoints/last.pt"


def runs_code(params: dict) -> str | None:
    """A network written in Python runs as code with the server account's rights."""
    return "jobs.run_code" if (params.get("network") or {}).get("source") == "python" else None


class TrainingConfig(AppConfig):
    name = "training"

    def ready(self) -> None:
        from .command import train_command
        from .monitor import page_context
        from .summary import summary_extra

        register_category(Category("models", "Models", order=20, group_link="compare curves"))
        register(JobKind("train", "Model", "models", train_command,
                         page_template="training/section.html", page_context=page_context,
                         new_page="new-model", create_endpoint="api-models", resume_file=RESUME_FILE,
                         summary_extra=summary_extra, required_permission=runs_code))
