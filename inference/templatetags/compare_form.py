"""``{% compare_form owner group %}``: the group page's Compare form, with a
score threshold where a model of the group is of a task whose evaluations
take one (inclusion tags pass the CSRF token on to their template)."""

from __future__ import annotations

from typing import Any

from django import template

from inference.evaluate.forms import SplitForm
from inference.evaluate.services import takes_score_threshold

register = template.Library()


@register.inclusion_tag("inference/compare_form.html")
def compare_form(owner: str, group: str) -> dict[str, Any]:
    return {"owner": owner, "group": group,
            "score_threshold": takes_score_threshold(owner, group) and SplitForm()["score_threshold"]}
