"""``manage.py ensure_admin``: make the administrator named by ADMIN_USERNAME
(with ADMIN_PASSWORD, and ADMIN_EMAIL if given) unless that account exists.
The launcher runs it at every start, so a deployment can have its
administrator from the environment instead of "first to sign up". Its
password must pass the same validators as one chosen on the sign-up page."""

import os

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Create the administrator named by ADMIN_USERNAME / ADMIN_PASSWORD unless it exists."

    def handle(self, *args, **options) -> None:
        username = os.environ.get("ADMIN_USERNAME", "").strip()
        if not username:
            return
        if User.objects.filter(username=username).exists():
            self.stdout.write(f"Administrator {username}: exists")
            return
        password = os.environ.get("ADMIN_PASSWORD", "")
        if not password:
            raise CommandError("ADMIN_USERNAME is set but ADMIN_PASSWORD is not: give both to make the administrator.")
        try:
            validate_password(password, User(username=username, email=os.environ.get("ADMIN_EMAIL", "")))
        except ValidationError as exc:
            raise CommandError(f"ADMIN_PASSWORD is not accepted: {' '.join(exc.messages)} Choose another.") from None
        User.objects.create_superuser(username, os.environ.get("ADMIN_EMAIL", ""), password)
        self.stdout.write(f"Administrator {username}: created")
