import os
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "digitslike.settings")

django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application does

# Imported once the apps are loaded: the limit looks up sessions and tokens.
from django.conf import settings  # noqa: E402

from accounts.middleware import signed_in_user  # noqa: E402
from digitslike.asgihandler import DataDirASGIHandler  # noqa: E402
from jobs import quotas  # noqa: E402
from jobs.uploadfiles import remove_stale_uploads  # noqa: E402
from trainer import environment  # noqa: E402
from web.bodylimit import BodyLimitMiddleware, UploadRoom  # noqa: E402
from web.fieldsfirst import FieldsFirstMiddleware  # noqa: E402

# Its secrets stay out of reach of job processes, which run as the same user.
environment.keep_private()
# Uploads a killed web process left behind (jobs/uploadfiles.py).
remove_stale_uploads(Path(settings.FILE_UPLOAD_TEMP_DIR))

application = BodyLimitMiddleware(FieldsFirstMiddleware(DataDirASGIHandler(), signed_in_user),
                                  UploadRoom(signed_in_user, quotas.disk_room, quotas.no_room_message))
