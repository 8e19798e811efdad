"""Per test file, what a run with ``TEST_CPU_REPORT`` set cost (see
``tests/cpureport.py``): tests, wall seconds, CPU seconds in the test's own
process and in the processes it started, per database pass, the costliest
first, as a Markdown table.

    .venv/bin/python scripts/test_cpu_table.py REPORT [--top N]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--top", type=int, default=40, help="files shown (the rest are summed)")
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    with open(args.report) as handle:
        for line in handle:
            test = json.loads(line)
            row = rows[test["file"]]
            row[f"{test['database']} tests"] += 1
            row[f"{test['database']} cpu"] += test["self"] + test["children"]
            row["self"] += test["self"]
            row["children"] += test["children"]
            row["wall"] += test["wall"]
    ranked = sorted(rows.items(), key=lambda item: -(item[1]["self"] + item[1]["children"]))
    print("| file | tests (SQLite + PostgreSQL) | CPU s SQLite | CPU s PostgreSQL | of it in started processes | wall s |")
    print("| --- | --- | --- | --- | --- | --- |")
    rest: dict[str, float] = defaultdict(float)
    for index, (name, row) in enumerate(ranked):
        if index >= args.top:
            for field, value in row.items():
                rest[field] += value
            continue
        print(_row(name, row))
    if rest:
        print(_row(f"{len(ranked) - args.top} other files", rest))
    total: dict[str, float] = defaultdict(float)
    for row in rows.values():
        for field, value in row.items():
            total[field] += value
    print(_row("**all**", total))


def _row(name: str, row: dict[str, float]) -> str:
    return (f"| {name} | {row['sqlite tests']:.0f} + {row['postgresql tests']:.0f} | {row['sqlite cpu']:.0f} "
            f"| {row['postgresql cpu']:.0f} | {row['children']:.0f} | {row['wall']:.0f} |")


if __name__ == "__main__":
    main()
