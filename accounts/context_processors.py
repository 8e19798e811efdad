from django.conf import settings
from django.http import HttpRequest


def signup(request: HttpRequest) -> dict[str, bool]:
    """Whether pages offer "Sign up" (SIGNUP_OPEN)."""
    return {"signup_open": settings.SIGNUP_OPEN}
