"""``web.urlnames``: the URL name a path resolves to, kept per URL conf, as
the ASGI middlewares ask it before Django resolves the path itself."""

from __future__ import annotations

from django.test import override_settings

from web.urlnames import KEPT_PATHS, _name, url_name


def test_a_path_gives_its_patterns_name_and_one_that_matches_none_gives_none():
    assert url_name("/api/datasets") == "api-datasets"
    assert url_name("/api/models/12/classify") == "api-model-classify"
    assert url_name("/no/such/page/") is None


def test_a_name_is_looked_up_under_the_url_conf_in_force_not_the_one_kept():
    assert url_name("/slow") is None
    with override_settings(ROOT_URLCONF="tests.digitslike.slowurls"):
        assert url_name("/slow") is None  # the pattern has no name
        assert url_name("/api/datasets") is None
    assert url_name("/api/datasets") == "api-datasets"


def test_the_paths_kept_are_bounded():
    _name.cache_clear()
    for n in range(KEPT_PATHS + 10):
        url_name(f"/jobs/{n}/")
    assert _name.cache_info().currsize == KEPT_PATHS
