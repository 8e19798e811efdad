"""Networks written as Python: text defining ``build(channels, classes, height, width)``.

The text runs in a fresh namespace holding ``torch``, ``nn`` (torch.nn), ``F``
(torch.nn.functional) and ``torchvision``. Every failure (a syntax error, an
exception while the text runs or inside ``build``, a result that is not a
module) becomes a ``NetworkError`` whose message ends with the traceback's
last lines in the user's code, given as line numbers of their text. The code
runs with the full rights of the process that builds it.
"""

from __future__ import annotations

import linecache
import traceback

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

from trainer.networks.layerspec import NetworkError

FILENAME = "<network code>"
SHOWN_FRAMES = 4


def describe(exc: BaseException, text: str) -> str:
    """The last lines of ``exc``'s traceback that are in ``text``, then the
    exception itself: what a user needs to find the failing line."""
    source = text.splitlines()
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == FILENAME]
    lines = []
    for frame in frames[-SHOWN_FRAMES:]:
        lines.append(f"  line {frame.lineno}, in {frame.name}")
        if frame.lineno is not None and 1 <= frame.lineno <= len(source):
            lines.append(f"    {source[frame.lineno - 1].strip()}")
    lines.extend(part.rstrip("\n") for part in traceback.format_exception_only(exc))
    return "\n".join(lines)


def _syntax(exc: SyntaxError) -> str:
    shown = "".join(traceback.format_exception_only(exc)).rstrip("\n")
    return shown.replace(f'File "{FILENAME}", line', "line")


def build_code(text: str, channels: int, classes: int, height: int, width: int) -> nn.Module:
    """Run ``text`` and return ``build(channels, classes, height, width)``."""
    try:
        compiled = compile(text, FILENAME, "exec")
    except (SyntaxError, ValueError) as exc:
        detail = _syntax(exc) if isinstance(exc, SyntaxError) else str(exc)
        raise NetworkError(f"The network code is not valid Python:\n{detail}") from None
    # Tracebacks printed later (a failure during training) show the user's lines too.
    linecache.cache[FILENAME] = (len(text), None, text.splitlines(keepends=True), FILENAME)
    namespace = {"__name__": "network_code", "torch": torch, "nn": nn, "F": F, "torchvision": torchvision}
    try:
        exec(compiled, namespace)
    except (Exception, SystemExit) as exc:
        raise NetworkError(f"The network code failed while it was run:\n{describe(exc, text)}") from None
    build = namespace.get("build")
    if not callable(build):
        raise NetworkError("The network code must define a function build(channels, classes, height, width) "
                           "that returns a torch.nn.Module")
    try:
        model = build(channels, classes, height, width)
    except (Exception, SystemExit) as exc:
        call = f"build(channels={channels}, classes={classes}, height={height}, width={width})"
        raise NetworkError(f"The network code failed in {call}:\n{describe(exc, text)}") from None
    if not isinstance(model, nn.Module):
        code = getattr(build, "__code__", None)
        where = f" (defined at line {code.co_firstlineno})" if code is not None and code.co_filename == FILENAME else ""
        raise NetworkError(f"build(){where} returned {type(model).__name__}, not a torch.nn.Module")
    return model
