"""The report of a classify-many or evaluation run, from its per-image rows:
top-1 and top-5 accuracy, per-class precision, recall and accuracy, the
confusion matrix, the mistakes by confidence and the top-N of each class.

A row is ``{"index", "name", "label", "top", "error"}``: ``label`` the true
class index or None, ``top`` the five best ``[class index, probability]``
pairs, best first (None for an image that could not be used). Plain Python:
no torch, so it reads as arithmetic over the rows.
"""

from __future__ import annotations

from typing import Any

MISTAKES_SHOWN = 500


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def confusion_matrix(rows: list[dict[str, Any]], classes: int) -> list[list[int]]:
    """Counts by true class (rows of the matrix) and predicted class (columns)."""
    matrix = [[0] * classes for _ in range(classes)]
    for row in rows:
        matrix[row["label"]][row["top"][0][0]] += 1
    return matrix


def per_class(matrix: list[list[int]], classes: list[str]) -> list[dict[str, Any]]:
    """Precision (of the images predicted as the class), recall (of the
    images of the class) and accuracy (one class against the rest: the share
    of all images rightly put in or out of it)."""
    total = sum(map(sum, matrix))
    found = []
    for c, name in enumerate(classes):
        hits = matrix[c][c]
        actual = sum(matrix[c])
        predicted = sum(line[c] for line in matrix)
        rightly_out = total - actual - predicted + hits
        found.append({"class": name, "count": actual, "predicted": predicted,
                      "precision": _ratio(hits, predicted), "recall": _ratio(hits, actual),
                      "accuracy": _ratio(hits + rightly_out, total)})
    return found


def top_n(rows: list[dict[str, Any]], classes: int, n: int) -> list[dict[str, list[int]]]:
    """Per class, of the images predicted as it: the ``n`` the model is most
    sure of (highest probability first) and the ``n`` it is least sure of
    (lowest first), as row indices."""
    predicted: list[list[dict[str, Any]]] = [[] for _ in range(classes)]
    for row in rows:
        predicted[row["top"][0][0]].append(row)
    found = []
    for members in predicted:
        members.sort(key=lambda row: -row["top"][0][1])
        found.append({"most": [r["index"] for r in members[:n]],
                      "least": [r["index"] for r in reversed(members[-n:])] if members else []})
    return found


def report(rows: list[dict[str, Any]], classes: list[str], n: int = 5) -> dict[str, Any]:
    """Everything the report page shows but the rows themselves."""
    classified = [row for row in rows if row["top"]]
    labelled = [row for row in classified if row["label"] is not None]
    wrong = [row for row in labelled if row["top"][0][0] != row["label"]]
    matrix = confusion_matrix(labelled, len(classes))
    in_top5 = sum(1 for row in labelled if row["label"] in [c for c, _ in row["top"]])
    wrong.sort(key=lambda row: -row["top"][0][1])
    return {
        "classes": classes,
        "count": len(rows),
        "classified": len(classified),
        "unreadable": len(rows) - len(classified),
        "labelled": len(labelled),
        "top1": _ratio(len(labelled) - len(wrong), len(labelled)),
        "top5": _ratio(in_top5, len(labelled)),
        "per_class": per_class(matrix, classes) if labelled else [],
        "confusion": matrix if labelled else None,
        "mistakes": [row["index"] for row in wrong[:MISTAKES_SHOWN]],
        "mistakes_total": len(wrong),
        "top_n": {"n": n, "classes": top_n(classified, len(classes), n)},
    }
