"""Uploads stream to a temporary file on disk and stop at UPLOAD_MAX_BYTES,
whatever the client claims its size is."""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import StopUpload, TemporaryFileUploadHandler
from django.http import HttpRequest, JsonResponse
from django.template.defaultfilters import filesizeformat

from digitslike.api import error


class LimitedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    def new_file(self, *args, **kwargs):
        self.received = 0
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.UPLOAD_MAX_BYTES:
            self.file.close()
            self.request.upload_too_large = True
            raise StopUpload(connection_reset=False)
        return super().receive_data_chunk(raw_data, start)


def too_large_message() -> str:
    return f"The upload is larger than the limit of {filesizeformat(settings.UPLOAD_MAX_BYTES)} (UPLOAD_MAX_BYTES)."


def refusal(request: HttpRequest) -> JsonResponse | None:
    """The 413 answer to a request whose upload is over the limit: by its
    announced length, or cut short by the handler above; None otherwise."""
    length = int(request.META.get("CONTENT_LENGTH") or 0)
    if length > settings.UPLOAD_MAX_BYTES + 1024 * 1024 or getattr(request, "upload_too_large", False):
        return error(too_large_message(), 413, errors={"archive": [too_large_message()]})
    return None
