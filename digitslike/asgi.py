import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")

django_application = get_asgi_application()

# Imported once the apps are loaded: the limit looks up sessions and tokens.
from digitslike.bodylimit import BodyLimitMiddleware  # noqa: E402
from digitslike.fieldsfirst import FieldsFirstMiddleware  # noqa: E402

application = BodyLimitMiddleware(FieldsFirstMiddleware(django_application))
