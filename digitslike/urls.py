from django.contrib import admin
from django.urls import include, path

from datasets.urls import api_urlpatterns as dataset_api
from inference.urls import api_urlpatterns as inference_api
from jobs.urls import api_urlpatterns as jobs_api
from pretrained.urls import api_urlpatterns as pretrained_api
from training.urls import api_urlpatterns as training_api
from web import api

from . import openapi, vendor

handler400 = api.bad_request
handler404 = api.page_not_found
handler500 = api.server_error

urlpatterns = [
    path("", include("jobs.urls")),
    path("", include("datasets.urls")),
    path("", include("accounts.urls")),
    path("", include("training.urls")),
    path("", include("devicechecks.urls")),
    path("", include("inference.urls")),
    path("", include("pretrained.urls")),
    path("api/", include(jobs_api)),
    path("api/", include(dataset_api)),
    path("api/", include(training_api)),
    path("api/", include(inference_api)),
    path("api/", include(pretrained_api)),
    path("api/openapi.json", openapi.schema_view, name="openapi"),
    path("api/", openapi.docs_view, name="api-docs"),
    path("admin/", admin.site.urls),
    path("vendor/plotly.min.js", vendor.plotly_js, name="plotly-js"),
]
