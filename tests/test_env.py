"""Settings come from the environment through typed helpers with clear errors."""

from pathlib import Path

import pytest

from digitslike.env import EnvError, database_from_url, env_bool, env_float, env_int, env_list, env_path


def test_database_urls():
    pg = database_from_url("postgres://me:p%40ss@db.example:6543/digits")
    assert (pg["ENGINE"], pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == (
        "django.db.backends.postgresql", "digits", "me", "p@ss", "db.example", "6543")
    assert database_from_url("sqlite:////var/lib/x.sqlite3")["NAME"] == "/var/lib/x.sqlite3"
    assert database_from_url("sqlite:///var/x.sqlite3")["NAME"] == "var/x.sqlite3"
    with pytest.raises(EnvError, match="mysql"):
        database_from_url("mysql://x/y")


def test_typed_values_and_their_errors(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "7")
    monkeypatch.setenv("X_FLOAT", "0.5")
    monkeypatch.setenv("X_LIST", " a, b ,,c ")
    monkeypatch.setenv("X_PATH", "~/data")
    assert env_bool("X_BOOL", False) is True
    assert env_int("X_INT", 1) == 7
    assert env_float("X_FLOAT", 1.0) == 0.5
    assert env_list("X_LIST", []) == ["a", "b", "c"]
    assert env_path("X_PATH", Path("/")) == Path.home() / "data"
    assert env_int("X_UNSET", 3) == 3
    monkeypatch.setenv("X_INT", "seven")
    with pytest.raises(EnvError, match="X_INT='seven' is not an integer"):
        env_int("X_INT", 1)
    monkeypatch.setenv("X_INT", "0")
    with pytest.raises(EnvError, match="must be at least 1"):
        env_int("X_INT", 1, minimum=1)
    monkeypatch.setenv("X_BOOL", "perhaps")
    with pytest.raises(EnvError, match="not a boolean"):
        env_bool("X_BOOL", False)
