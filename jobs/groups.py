"""The page of a group of jobs. Jobs are grouped by owner and group name
whatever their kind, but the page that shows a group is an app's (the one
that compares the curves of a group's models), so that app registers its URL
here when Django starts (``AppConfig.ready``). Without one, groups are still listed, only not linked."""

from __future__ import annotations

from collections.abc import Callable

_page: Callable[[str, str], str] | None = None


def register_page(url: Callable[[str, str], str]) -> None:
    """Register the URL of the page of a group: ``url(owner, group)``."""
    global _page
    _page = url


def page_url(owner: str, group: str) -> str | None:
    """The page of ``owner``'s group of that name, or None for no group or no page."""
    return _page(owner, group) if group and _page else None
