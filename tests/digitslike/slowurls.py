"""A URL configuration with one view that takes a while and counts the
requests running it at once, for the ASGI handler's tests."""

import threading
import time

from django.http import HttpResponse
from django.urls import path

SECONDS = 0.2
running = {"now": 0, "most": 0}
_lock = threading.Lock()


def slow(request):
    with _lock:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
    time.sleep(SECONDS)
    with _lock:
        running["now"] -= 1
    return HttpResponse("done")


urlpatterns = [path("slow", slow)]
