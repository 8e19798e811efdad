from django.urls import path

from . import api, classify_views, export_api, export_views, views

urlpatterns = [
    path("evaluations/new/", views.new_evaluation, name="new-evaluation"),
    path("models/<int:model_id>/evaluate", views.evaluate, name="model-evaluate"),
    path("models/<int:model_id>/classify", classify_views.page, name="model-classify"),
    path("compare/<str:owner>/<path:group>", views.compare, name="group-compare"),
    path("evaluations/<int:job_id>/images/<int:index>.png", views.image, name="evaluation-image"),
    path("evaluations/<int:job_id>/download/<str:what>", views.download, name="evaluation-download"),
    path("models/<int:model_id>/export", export_views.export_model, name="model-export"),
    path("exports/<int:job_id>/archive", export_views.archive, name="export-archive"),
]

api_urlpatterns = [
    path("models/<int:model_id>/evaluate", api.evaluate, name="api-model-evaluate"),
    path("models/<int:model_id>/classify", classify_views.classify_api, name="api-model-classify"),
    path("evaluations", api.create, name="api-evaluations"),
    path("evaluations/<int:job_id>/report", api.report, name="api-evaluation-report"),
    path("evaluations/<int:job_id>/rows", api.rows, name="api-evaluation-rows"),
    path("compare/<str:owner>/<path:group>", api.compare, name="api-compare"),
    path("models/<int:model_id>/export", export_api.export, name="api-model-export"),
    path("exports/<int:job_id>/archive", export_api.archive, name="api-export-archive"),
]
