from django.urls import path

from . import api, views

urlpatterns = [
    path("datasets/new/", views.new_dataset, name="new-dataset"),
    path("datasets/preview", views.preview, name="dataset-preview"),
    path("datasets/sample", views.make_sample, name="dataset-sample"),
    path("datasets/<int:job_id>/explore", views.explore, name="dataset-explore"),
    path("datasets/<int:job_id>/mean.png", views.mean_image, name="dataset-mean"),
    path("datasets/<int:job_id>/skipped.json", views.skipped_report, name="dataset-skipped"),
    path("datasets/<int:job_id>/coco.zip", views.coco_zip, name="dataset-coco"),
    path("datasets/<int:job_id>/images/<str:split>/<int:index>.png", views.image, name="dataset-image"),
    path("datasets/<int:job_id>/masks/<str:split>/<int:index>.png", views.mask, name="dataset-mask"),
]

api_urlpatterns = [
    path("datasets", api.create, name="api-datasets"),
    path("datasets/<int:job_id>", api.dataset, name="api-dataset"),
    path("folders", api.folders, name="api-folders"),
]
