"""Settings come from the environment through typed helpers with clear errors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from digitslike.env import EnvError, database_from_url, env_bool, env_float, env_int, env_list, env_path
from tests.processes import ROOT


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


def manage(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "SQLITE_TEST_NAME")}
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**clean, "DATA_DIR": str(data_dir), **env},
                          capture_output=True, text=True, timeout=120)


def test_the_data_folder_database_and_secret_key_are_made_private(tmp_path):
    data_dir = tmp_path / "data"
    assert manage(data_dir, "migrate", "-v0").returncode == 0
    modes = {path.name: path.stat().st_mode & 0o777 for path in (data_dir, data_dir / "db.sqlite3",
                                                               data_dir / "secret_key")}
    assert modes == {"data": 0o700, "db.sqlite3": 0o600, "secret_key": 0o600}


def test_an_existing_data_folder_open_to_others_is_made_private_at_start(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    assert manage(data_dir, "check").returncode == 0
    assert data_dir.stat().st_mode & 0o777 == 0o700


# What docs/deploy.md gives for serving over HTTPS behind a proxy.
DEPLOY_SETTINGS = {"SECRET_KEY": "k" * 20 + "9Zq#x" * 10, "ALLOWED_HOSTS": "gpu.example.org", "HTTPS": "true",
                   "BEHIND_PROXY": "true", "HSTS_SECONDS": "31536000", "HSTS_INCLUDE_SUBDOMAINS": "true",
                   "HSTS_PRELOAD": "true"}


def test_the_deployment_settings_in_the_docs_pass_djangos_deploy_check(tmp_path):
    docs = (ROOT / "docs" / "deploy.md").read_text()
    for name, value in DEPLOY_SETTINGS.items():
        if name not in ("SECRET_KEY", "ALLOWED_HOSTS"):
            assert f"{name}={value}" in docs, f"docs/deploy.md gives {name}={value}"
    checked = manage(tmp_path / "data", "check", "--deploy", "--fail-level", "WARNING", **DEPLOY_SETTINGS)
    assert checked.returncode == 0, checked.stdout + checked.stderr
