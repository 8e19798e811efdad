from django.urls import path

from .classify import api as classify_api
from .classify import views as classify_views
from .detect import api as detect_api
from .detect import views as detect_views
from .evaluate import api as evaluate_api
from .evaluate import views as evaluate_views
from .export import api as export_api
from .export import views as export_views
from .segment import api as segment_api
from .segment import views as segment_views

urlpatterns = [
    path("evaluations/new/", evaluate_views.new_evaluation, name="new-evaluation"),
    path("models/<int:model_id>/evaluate", evaluate_views.evaluate, name="model-evaluate"),
    path("models/<int:model_id>/classify", classify_views.page, name="model-classify"),
    path("models/<int:model_id>/detect", detect_views.page, name="model-detect"),
    path("models/<int:model_id>/segment", segment_views.page, name="model-segment"),
    path("compare/<str:owner>/<path:group>", evaluate_views.compare, name="group-compare"),
    path("evaluations/<int:job_id>/images/<int:index>.png", evaluate_views.image, name="evaluation-image"),
    path("evaluations/<int:job_id>/download/<str:what>", evaluate_views.download, name="evaluation-download"),
    path("models/<int:model_id>/export", export_views.export_model, name="model-export"),
    path("exports/<int:job_id>/archive", export_views.archive, name="export-archive"),
]

api_urlpatterns = [
    path("models/<int:model_id>/evaluate", evaluate_api.evaluate, name="api-model-evaluate"),
    path("models/<int:model_id>/classify", classify_api.classify, name="api-model-classify"),
    path("models/<int:model_id>/detect", detect_api.detect, name="api-model-detect"),
    path("models/<int:model_id>/segment", segment_api.segment, name="api-model-segment"),
    path("evaluations", evaluate_api.create, name="api-evaluations"),
    path("evaluations/<int:job_id>/report", evaluate_api.report, name="api-evaluation-report"),
    path("evaluations/<int:job_id>/rows", evaluate_api.rows, name="api-evaluation-rows"),
    path("compare/<str:owner>/<path:group>", evaluate_api.compare, name="api-compare"),
    path("models/<int:model_id>/export", export_api.export, name="api-model-export"),
    path("exports/<int:job_id>/archive", export_api.archive, name="api-export-archive"),
]
