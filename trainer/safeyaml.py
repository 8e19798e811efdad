"""YAML from users, read without its anchors and aliases: a few hundred
bytes of aliases of aliases stand for millions of items once the structure
is walked (to check it, to convert it, or to show it in a message), so they
are refused from the text's tokens, before any node is built."""

from __future__ import annotations

import yaml


class AliasesRefused(ValueError):
    """The text has an anchor or an alias; ``line`` and ``column`` (from 1) say where."""

    def __init__(self, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: YAML anchors (&name) and aliases (*name) are not allowed")
        self.line, self.column = line, column


def refuse_aliases(text: str) -> None:
    """AliasesRefused at the first anchor or alias of ``text``; yaml.YAMLError where it does not scan."""
    for token in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(token, yaml.AnchorToken | yaml.AliasToken):
            raise AliasesRefused(token.start_mark.line + 1, token.start_mark.column + 1)
