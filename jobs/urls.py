from django.urls import path

from . import api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("events", views.jobs_events, name="jobs-events"),
    path("resources/", views.resources_page, name="resources"),
    path("jobs/<int:job_id>/", views.job_page, name="job"),
    path("jobs/<int:job_id>/events", views.job_events, name="job-events"),
    path("jobs/<int:job_id>/abort", views.abort, name="job-abort"),
    path("jobs/<int:job_id>/restart", views.restart, name="job-restart"),
    path("jobs/<int:job_id>/clone", views.clone, name="job-clone"),
    path("jobs/<int:job_id>/delete", views.delete, name="job-delete"),
    path("jobs/<int:job_id>/resume", views.resume, name="job-resume"),
    path("jobs/<int:job_id>/edit", views.edit, name="job-edit"),
    path("jobs/<int:job_id>/queue", views.queue_place, name="job-queue"),
    path("resources/limits", views.device_limit, name="device-limit"),
]

api_urlpatterns = [
    path("jobs", api.jobs, name="api-jobs"),
    path("jobs/bulk", api.bulk, name="api-jobs-bulk"),
    path("jobs/<int:job_id>", api.job, name="api-job"),
    path("jobs/<int:job_id>/abort", api.abort, name="api-job-abort"),
    path("jobs/<int:job_id>/restart", api.restart, name="api-job-restart"),
    path("jobs/<int:job_id>/clone", api.clone, name="api-job-clone"),
    path("jobs/<int:job_id>/resume", api.resume, name="api-job-resume"),
    path("jobs/<int:job_id>/log", api.log, name="api-job-log"),
    path("jobs/<int:job_id>/queue", api.queue_place, name="api-job-queue"),
    path("users/<str:username>/device_limit", api.device_limit, name="api-device-limit"),
    path("jobs/<int:job_id>/events", views.job_events, name="api-job-events"),
    path("events", views.jobs_events, name="api-events"),
    path("resources", api.resources_view, name="api-resources"),
    path("me", api.me, name="api-me"),
]
