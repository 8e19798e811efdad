"""API token authentication: ``Authorization: Token <key>`` signs the request
in as the token's user. Such requests carry no session cookie, so CSRF does
not apply to them. ``signed_in_user`` finds the same user from a request's
headers alone, before Django has the request (the body limit asks it)."""

from http.cookies import CookieError, SimpleCookie

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import User
from django.utils.module_loading import import_string

from .models import ApiToken

PREFIX = "Token "


def _session_user(session_key: str) -> User | None:
    store = import_string(f"{settings.SESSION_ENGINE}.SessionStore")(session_key)
    user_id = store.get(SESSION_KEY)
    return None if user_id is None else User.objects.filter(pk=user_id, is_active=True).first()


async def signed_in_user(headers: dict[str, str]) -> User | None:
    """The active user the request's API token or session cookie is of."""
    authorization = headers.get("authorization", "")
    if authorization.startswith(PREFIX):
        return await ApiToken.auser_for(authorization[len(PREFIX):].strip())
    try:
        morsel = SimpleCookie(headers.get("cookie", "")).get(settings.SESSION_COOKIE_NAME)
    except CookieError:
        return None
    return await sync_to_async(_session_user)(morsel.value) if morsel and morsel.value else None


class TokenAuthenticationMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    @staticmethod
    def _key(request) -> str | None:
        header = request.headers.get("Authorization", "")
        return header[len(PREFIX):].strip() if header.startswith(PREFIX) else None

    @staticmethod
    def _sign_in(request, user: User | None) -> None:
        request.token_rejected = user is None
        if user is not None:
            request.user = user

            async def auser():
                return user

            request.auser = auser
            request._dont_enforce_csrf_checks = True

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        if (key := self._key(request)) is not None:
            self._sign_in(request, ApiToken.user_for(key))
        return self.get_response(request)

    async def __acall__(self, request):
        if (key := self._key(request)) is not None:
            self._sign_in(request, await ApiToken.auser_for(key))
        return await self.get_response(request)
