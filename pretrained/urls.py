from django.urls import path

from . import api, views

urlpatterns = [
    path("pretrained/new/", views.new_pretrained, name="new-pretrained"),
    path("models/<int:model_id>/pretrained", views.from_snapshot, name="model-pretrained"),
]

api_urlpatterns = [
    path("pretrained", api.create, name="api-pretrained"),
    path("models/<int:model_id>/pretrained", api.from_snapshot, name="api-model-pretrained"),
]
