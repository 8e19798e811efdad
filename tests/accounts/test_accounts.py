"""Sign up, sign in and out, the first user as administrator, API tokens."""

import re
from datetime import timedelta

import httpx
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import LAST_USED_RESOLUTION, ApiToken
from tests.processes import start_web
from tests.redisserver import free_port

PASSWORD = "a long enough passphrase"


def sign_up(client, username):
    return client.post("/signup/", {"username": username, "email": "", "password1": PASSWORD,
                                    "password2": PASSWORD})


def test_the_first_account_is_the_administrator_and_later_ones_are_not(db):
    first = Client()
    assert sign_up(first, "ada").status_code == 302
    assert first.get("/").status_code == 200  # signed in by signing up
    assert sign_up(Client(), "bea").status_code == 302
    ada, bea = User.objects.get(username="ada"), User.objects.get(username="bea")
    assert ada.is_staff and ada.is_superuser
    assert not bea.is_staff and not bea.is_superuser


def test_sign_up_errors_are_shown_and_nothing_is_made(db):
    response = Client().post("/signup/", {"username": "x", "password1": "a", "password2": "b"})
    assert response.status_code == 200
    assert "didn’t match" in response.content.decode() or "didn't match" in response.content.decode()
    assert not User.objects.exists()


def test_sign_in_and_out(alice):
    client = Client()
    assert client.get("/").status_code == 302  # to the sign-in page
    wrong = client.post("/login/", {"username": "alice", "password": "wrong"})
    assert wrong.status_code == 200 and "correct username and password" in wrong.content.decode()
    assert client.post("/login/", {"username": "alice", "password": "correct horse battery"}).status_code == 302
    assert client.get("/").status_code == 200
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_tokens_are_made_shown_once_and_revoked_from_the_account_page(alice):
    client = Client()
    client.force_login(alice)
    page = client.post("/account/", {"name": "laptop"}).content.decode()
    key = re.search(r'<code id="new-token">([^<]+)</code>', page).group(1)
    assert client.get("/account/").content.decode().count(key) == 0
    api = Client()
    assert api.get("/api/me", headers={"Authorization": f"Token {key}"}).status_code == 200
    token = ApiToken.objects.get(user=alice)
    assert token.last_used_at is not None
    client.post(f"/account/tokens/{token.pk}/revoke")
    assert api.get("/api/me", headers={"Authorization": f"Token {key}"}).status_code == 401


def test_a_tokens_last_use_is_written_at_most_once_a_minute(alice):
    token, key = ApiToken.issue(alice, "loop")
    assert ApiToken.user_for(key) == alice
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert ApiToken.user_for(key) == alice
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first  # within the minute: not written again
    stale = first - LAST_USED_RESOLUTION
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=stale + timedelta(seconds=10))
    ApiToken.user_for(key)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == stale + timedelta(seconds=10)  # under a minute old
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=stale)
    ApiToken.user_for(key)
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first  # a minute old: brought up to date


def test_a_revoked_token_or_an_inactive_users_is_refused_at_its_next_request(alice):
    token, key = ApiToken.issue(alice, "loop")
    assert ApiToken.user_for(key) == alice
    alice.is_active = False
    alice.save()
    assert ApiToken.user_for(key) is None
    alice.is_active = True
    alice.save()
    token.delete()
    assert ApiToken.user_for(key) is None
    assert ApiToken.user_for("") is None


def test_a_user_cannot_revoke_someone_elses_token(alice, bob):
    token, _ = ApiToken.issue(alice, "laptop")
    client = Client()
    client.force_login(bob)
    assert client.post(f"/account/tokens/{token.pk}/revoke").status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_only_a_digest_of_the_key_is_stored(alice):
    token, key = ApiToken.issue(alice, "laptop")
    assert key not in str(ApiToken.objects.filter(pk=token.pk).values().get())


def test_closed_sign_up_makes_no_account_and_offers_none(db, settings):
    settings.SIGNUP_OPEN = False
    refused = sign_up(Client(), "mallory")
    assert refused.status_code == 403 and "Sign-up is closed" in refused.content.decode()
    assert not User.objects.exists()
    assert "/signup/" not in Client().get("/login/").content.decode()


def test_the_first_to_sign_up_is_no_administrator_when_that_rule_is_off(db, settings):
    settings.FIRST_SIGNUP_IS_ADMIN = False
    assert sign_up(Client(), "ada").status_code == 302
    assert not User.objects.get(username="ada").is_staff


def test_the_administrator_can_come_from_the_environment(db, monkeypatch):
    monkeypatch.setenv("ADMIN_USERNAME", "chief")
    monkeypatch.setenv("ADMIN_PASSWORD", PASSWORD)
    call_command("ensure_admin")
    call_command("ensure_admin")  # again at the next start: kept as it is
    chief = User.objects.get(username="chief")
    assert chief.is_superuser and chief.check_password(PASSWORD)
    assert sign_up(Client(), "ada").status_code == 302
    assert not User.objects.get(username="ada").is_staff, "no longer the first account"
    monkeypatch.delenv("ADMIN_PASSWORD")
    monkeypatch.setenv("ADMIN_USERNAME", "deputy")
    with pytest.raises(CommandError, match="ADMIN_PASSWORD is not"):
        call_command("ensure_admin")


@pytest.mark.parametrize("password, reason", [("12345678", "This password is too common."),
                                              ("x7Qz", "This password is too short. It must contain at least 8 characters.")])
def test_the_administrator_from_the_environment_needs_a_password_djangos_validators_accept(db, monkeypatch,
                                                                                         password, reason):
    monkeypatch.setenv("ADMIN_USERNAME", "chief")
    monkeypatch.setenv("ADMIN_PASSWORD", password)
    with pytest.raises(CommandError, match=f"ADMIN_PASSWORD is not accepted: {reason}"):
        call_command("ensure_admin")
    assert not User.objects.filter(username="chief").exists()


def test_sign_in_attempts_are_limited_per_user_and_address(alice, settings):
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(2):
        assert client.post("/login/", {"username": "alice", "password": "wrong"}).status_code == 200
    locked = client.post("/login/", {"username": "alice", "password": "wrong"})
    assert locked.status_code == 429 and "Too many sign-in attempts" in locked.content.decode()
    right = client.post("/login/", {"username": "alice", "password": "correct horse battery"})
    assert right.status_code == 429, "the right password does not help while locked out"
    other = Client().post("/login/", {"username": "bob", "password": "wrong"})
    assert other.status_code == 200, "another user name from the same address is not locked"


def sign_in_over_http(client: httpx.Client, forwarded_for: str) -> int:
    """A wrong sign-in to a real web server, its X-Forwarded-For set as a
    client chooses."""
    form = client.get("/login/").text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    return client.post("/login/", data={"username": "alice", "password": "wrong", "csrfmiddlewaretoken": token},
                       headers={"X-Forwarded-For": forwarded_for}).status_code


def sign_in_statuses(db_url, log_dir, forwarded: list[str], **env: str) -> list[int]:
    port = free_port()
    web = start_web(db_url, port, log_dir, LOGIN_FAILURE_LIMIT="3", **env)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            return [sign_in_over_http(client, address) for address in forwarded]
    finally:
        web.stop()


def test_a_client_cannot_escape_the_lockout_by_naming_other_addresses(alice, db_url, log_dir):
    rotated = [f"203.0.113.{n}" for n in range(5)]
    assert sign_in_statuses(db_url, log_dir, rotated) == [200, 200, 429, 429, 429], \
        "X-Forwarded-For from a peer not in FORWARDED_ALLOW_IPS is ignored"


def test_behind_a_configured_proxy_each_client_is_counted_on_its_own(alice, db_url, log_dir):
    addresses = ["203.0.113.1"] * 3 + ["203.0.113.2"]
    statuses = sign_in_statuses(db_url, log_dir, addresses, FORWARDED_ALLOW_IPS="127.0.0.1")
    assert statuses == [200, 200, 429, 200], "one client locked out does not lock out another behind the same proxy"
