"""Routes of model training: creating models (``create``) and watching and
using them (``monitor``)."""

from . import create, monitor

urlpatterns = create.urlpatterns + monitor.urlpatterns
api_urlpatterns = create.api_urlpatterns + monitor.api_urlpatterns
