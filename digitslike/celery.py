import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")

app = Celery("digitslike")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
