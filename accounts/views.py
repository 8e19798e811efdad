from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from .forms import SignupForm, TokenForm
from .models import ApiToken


def signup(request: HttpRequest) -> HttpResponse:
    if not settings.SIGNUP_OPEN:
        return render(request, "registration/signup_closed.html", status=403)
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            first = settings.FIRST_SIGNUP_IS_ADMIN and not User.objects.exists()
            user = form.save(commit=False)
            user.is_staff = user.is_superuser = first
            user.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        if first:
            messages.info(request, "You are the first user, so you are the administrator.")
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})


@login_required
def account(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        _, new_key = ApiToken.issue(request.user, form.cleaned_data["name"])
        form = TokenForm()
    tokens = request.user.api_tokens.all()
    return render(request, "accounts/account.html", {"form": form, "tokens": tokens, "new_key": new_key})


@login_required
@require_POST
def revoke_token(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken, pk=token_id, user=request.user)
    token.delete()
    messages.success(request, f"Revoked the token “{token.name}”.")
    return redirect("account")
