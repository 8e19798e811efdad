from django.urls import path

from . import views

urlpatterns = [
    path("checks/new/", views.new_device_check, name="new-device-check"),
]
