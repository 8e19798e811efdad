"""Typed readers for settings that come from the environment.

Each reader fails loudly on a value it cannot parse, so a typo in a
deployment stops the app at start-up instead of changing behaviour quietly.
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlparse


class EnvError(ValueError):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise EnvError(f"{name}={raw!r} is not a boolean (use true or false)")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise EnvError(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise EnvError(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise EnvError(f"{name}={raw!r} is not a number") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_path(name: str, default: Path) -> Path:
    raw = os.environ.get(name)
    return Path(raw).expanduser().resolve() if raw else default.resolve()


def create_private_file(path: Path, text: str) -> None:
    """Create ``path`` readable by this user alone (0600), unless it exists."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


def make_private_folder(path: Path) -> None:
    """Create ``path`` for this user alone (0700), and tighten it to that if it
    exists open to others (a folder made by hand, or an older install):
    everything in it is private. A folder this user may not change stops
    the start, saying why."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777
    if mode == 0o700:
        return
    try:
        path.chmod(0o700)
    except PermissionError as exc:
        raise EnvError(f"DATA_DIR={path} is open to other users (mode {mode:o}) and this account may not make it "
                       f"private ({exc.strerror}); run as its owner, or chmod 700 it.") from None


def database_from_url(url: str) -> dict:
    """Translate a DATABASE_URL (postgres:// or sqlite:///) into Django's form."""
    parsed = urlparse(url)
    if parsed.scheme in ("postgres", "postgresql"):
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")),
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    if parsed.scheme == "sqlite":
        # As elsewhere: sqlite:///relative/path, sqlite:////absolute/path.
        path = unquote(parsed.path)
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": "/" + path.lstrip("/") if path.startswith("//") else path[1:]}
    raise EnvError(f"DATABASE_URL scheme {parsed.scheme!r} is not supported (use postgres:// or sqlite:///)")
