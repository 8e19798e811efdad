"""A network written in Python, checked on the form without running it, so
that a typo is a field error and not a failed job."""

from __future__ import annotations

import ast


def code_problem(text: str) -> str | None:
    """What keeps ``text`` from being a network's code (a syntax error, no
    ``build``), or None. The code is parsed, never run."""
    try:
        tree = ast.parse(text, "<network code>")
    except SyntaxError as exc:
        return f"Line {exc.lineno}: {exc.msg}"
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    defined |= {target.id for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    if "build" not in defined:
        return "The code must define build(channels, classes, height, width) returning an nn.Module."
    return None
