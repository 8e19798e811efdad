"""A real browser for page tests: Playwright driving the system's Chromium
against the real web server, through the ``page`` fixture (tests/conftest.py),
which fails a test on a JavaScript error, a console error (a refused
Content-Security-Policy, a 404) or a failed request."""

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not shutil.which("chromium"), reason="needs Chromium (scripts/test.sh installs it)")


def sign_up(page, username):
    page.goto("/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", "a long enough passphrase")
    page.fill("#id_password2", "a long enough passphrase")
    page.click("text=Create account")
    page.wait_for_url("**/")
