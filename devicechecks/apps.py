from django.apps import AppConfig

from jobs.kinds import Category, JobKind, python_module, register, register_category


class DeviceChecksConfig(AppConfig):
    name = "devicechecks"

    def ready(self) -> None:
        # These import the job model, which exists only once apps are loaded.
        from .forms import DeviceCheckForm
        from .views import page_context

        register_category(Category("checks", "Device checks", order=30))
        register(JobKind("devicecheck", "Device check", "checks", python_module("trainer.devicecheck"),
                         page_template="devicechecks/section.html", page_context=page_context,
                         new_page="new-device-check", create_form=DeviceCheckForm))
