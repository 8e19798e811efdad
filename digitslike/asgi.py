import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")

django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does

# Imported once the apps are loaded: the limit looks up sessions and tokens.
from digitslike.asgihandler import DataDirASGIHandler  # noqa: E402
from digitslike.bodylimit import BodyLimitMiddleware  # noqa: E402
from digitslike.fieldsfirst import FieldsFirstMiddleware  # noqa: E402

application = BodyLimitMiddleware(FieldsFirstMiddleware(DataDirASGIHandler()))
