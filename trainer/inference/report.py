"""The report of a classify-many or evaluate run, from its rows (as
``classify.evaluate`` gives them: ``{"image", "label", "top", "error"}``).
Plain Python, no torch: the web app may build it from a stored result.

With labels: top-1 and top-5 accuracy, the confusion matrix (rows are the
true classes, columns the predicted ones), per-class precision, recall and
one-vs-rest accuracy, and the mistakes, most confident first (label noise
shows up there). With or without: per predicted class, the N images the
model is most sure of and the N it is least sure of.
"""

from __future__ import annotations

from typing import Any

TOP_N = 10


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _short(row: dict[str, Any]) -> dict[str, Any]:
    best = row["top"][0]
    return {"image": row["image"], "label": row["label"], "predicted": best["index"], "confidence": best["probability"]}


def confusion_matrix(rows: list[dict[str, Any]], classes: int) -> list[list[int]]:
    matrix = [[0] * classes for _ in range(classes)]
    for row in rows:
        matrix[row["label"]][row["top"][0]["index"]] += 1
    return matrix


def per_class(matrix: list[list[int]], names: list[str]) -> list[dict[str, Any]]:
    total = sum(map(sum, matrix))
    result = []
    for k, name in enumerate(names):
        true_positive = matrix[k][k]
        labelled = sum(matrix[k])
        predicted = sum(row[k] for row in matrix)
        true_negative = total - labelled - predicted + true_positive
        result.append({"class": name, "count": labelled, "predicted": predicted,
                       "precision": _ratio(true_positive, predicted), "recall": _ratio(true_positive, labelled),
                       "accuracy": _ratio(true_positive + true_negative, total)})
    return result


def confidence_extremes(rows: list[dict[str, Any]], names: list[str], top_n: int) -> list[dict[str, Any]]:
    """Per class, among the images predicted as it: the ``top_n`` most and least confident."""
    result = []
    for k, name in enumerate(names):
        mine = sorted((row for row in rows if row["top"][0]["index"] == k),
                      key=lambda row: row["top"][0]["probability"], reverse=True)
        result.append({"class": name, "most": [_short(row) for row in mine[:top_n]],
                       "least": [_short(row) for row in mine[::-1][:top_n]]})
    return result


def report(rows: list[dict[str, Any]], classes: list[str], top_n: int = TOP_N) -> dict[str, Any]:
    """The whole report (see the module's docstring); measures that need
    labels are None when no image has one."""
    answered = [row for row in rows if row["top"]]
    labelled = [row for row in answered if row["label"] is not None]
    result: dict[str, Any] = {
        "images": len(rows), "errors": len(rows) - len(answered), "labelled": len(labelled),
        "top1": None, "top5": None, "confusion": None, "per_class": None, "mistakes": None,
        "confidence": confidence_extremes(answered, classes, top_n),
    }
    if labelled:
        matrix = confusion_matrix(labelled, len(classes))
        mistakes = [_short(row) for row in labelled if row["top"][0]["index"] != row["label"]]
        result.update(
            top1=_ratio(sum(matrix[k][k] for k in range(len(classes))), len(labelled)),
            top5=_ratio(sum(any(c["index"] == row["label"] for c in row["top"][:5]) for row in labelled), len(labelled)),
            confusion=matrix, per_class=per_class(matrix, classes),
            mistakes=sorted(mistakes, key=lambda row: row["confidence"], reverse=True))
    return result
