"""Routes of model training: its pages (``views``) and its JSON API (``api``)."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("models/new/", views.new_model, name="new-model"),
    path("models/lr-preview", views.lr_preview, name="model-lr-preview"),
    path("models/customize", views.customize, name="model-customize"),
    path("models/visualize", views.visualize, name="model-visualize"),
    path("jobs/<int:job_id>/files/<path:relative>", views.job_file, name="job-file"),
    path("jobs/<int:job_id>/profile", views.profile, name="job-profile"),
    path("groups/<str:owner>/<path:group>/", views.group_page, name="group"),
    path("compare/", views.compare_page, name="compare"),
    path("searches/<int:search_id>/", views.search_page, name="search"),
    path("searches/<int:search_id>/more", views.search_more, name="search-more"),
]

api_urlpatterns = [
    path("models", api.models, name="api-models"),
    path("lr-preview", api.lr_preview, name="api-lr-preview"),
    path("jobs/<int:job_id>/metrics", api.metrics, name="api-job-metrics"),
    path("jobs/<int:job_id>/profile", api.profile, name="api-job-profile"),
    path("groups/<str:owner>/<path:group>", api.group, name="api-group"),
    path("compare", api.compare_runs, name="api-compare"),
    path("searches/<int:search_id>", api.search, name="api-search"),
    path("searches/<int:search_id>/more", api.search_more, name="api-search-more"),
]
