"""API token authentication: ``Authorization: Token <key>`` signs the request
in as the token's user. Such requests carry no session cookie, so CSRF does
not apply to them."""

from asgiref.sync import async_to_sync, iscoroutinefunction, markcoroutinefunction

from .models import ApiToken

PREFIX = "Token "


class TokenAuthenticationMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    async def _authenticate(self, request) -> None:
        header = request.headers.get("Authorization", "")
        if not header.startswith(PREFIX):
            return
        user = await ApiToken.user_for(header[len(PREFIX):].strip())
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
        async_to_sync(self._authenticate)(request)
        return self.get_response(request)

    async def __acall__(self, request):
        await self._authenticate(request)
        return await self.get_response(request)
