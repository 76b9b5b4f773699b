"""Dynamo's own reports, read through one door: its graph-break log and its skip reasons.

``torch._dynamo.explain`` (and a backend that records ``compile_subgraph_reason``) only
sees a graph break when a graph is compiled at it, so a break with no tensor op before it
(a forward hook, an unsupported call as the first statement of a frame, a break in an
inlined helper) goes unreported. Dynamo itself logs every break it takes to the
``graph_breaks`` logging artifact (``TORCH_LOGS=graph_breaks``): :func:`recording` listens
to that artifact for the duration of a call, without printing anything, and
:func:`parse_break` turns one log message into a :class:`LoggedBreak`.

Everything here leans on Dynamo internals that may move between releases (the artifact's
logger names and message layout, ``eval_frame``'s skip-reason list); each is behind one
function with a fallback, so a change degrades a report instead of raising.
"""
from __future__ import annotations

import contextlib
import linecache
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from .._lang import only
from .._text import first_line

__all__ = ["LoggedBreak", "Recording", "describe_skip", "parse_break", "recording"]

_ARTIFACT = "graph_breaks"
_AT = re.compile(r"in user code at (?P<file>.+?):(?P<line>\d+)\s*$", re.M)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)\n(?P<src>(?:    [^\n]*)?)', re.M)
_UNRESUMABLE = ("Failed to handle graph break gracefully", "Encountered graph break that we cannot resume from",
                "Graph break: torch.compile cannot properly resume")
_SKIPPED_REST = ("Dynamo could not resume after this break: the rest of the frame runs eagerly",
                 "Dynamo 无法在这次图中断之后恢复：这一帧余下的部分以 eager 方式运行")


@dataclass
class LoggedBreak:
    """One graph break as Dynamo logged it."""

    reason: str  # the break's type, e.g. "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    file: str  # full path of the user's file
    lineno: int
    function: str
    line: str  # the user's source line
    explanation: str = ""
    effect: str = ""  # set when Dynamo skipped the rest of the frame
    call: int = 1
    stack: tuple[tuple[str, int, str, str], ...] = ()  # the user traceback: (file, line, function, source)


@dataclass
class Recording:
    """What :func:`recording` heard: graph-break messages and the frames Dynamo skipped."""

    messages: list[tuple[int, str, str]] = field(default_factory=list)  # (call, message, exception text)
    skips: list[str] = field(default_factory=list)  # "name (file:line): reason"
    call: int = 1

    @property
    def breaks(self) -> list[LoggedBreak]:
        return [b for b in (parse_break(m, e, c) for c, m, e in self.messages) if b is not None]


class _Listener(logging.Handler):
    def __init__(self, into: Recording) -> None:
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: keep its template
            message = str(record.msg)
        error = record.exc_info[1] if record.exc_info else None
        self.into.messages.append((self.into.call, message, str(error) if error is not None else ""))
        _reset_duplicate_checker()  # so the next break is logged with its user stack too

    def handle(self, record: logging.LogRecord) -> bool:  # no lock needed: we only append
        self.emit(record)
        return True


def _graph_break_loggers() -> list[logging.Logger]:
    """The loggers of the ``graph_breaks`` artifact (one per Dynamo module that logs breaks)."""
    with contextlib.suppress(Exception):  # importing registers them
        import torch._dynamo.convert_frame  # noqa: F401
        import torch._dynamo.symbolic_convert  # noqa: F401
    return [lg for lg in list(logging.Logger.manager.loggerDict.values())
            if isinstance(lg, logging.Logger) and getattr(lg, "artifact_name", None) == _ARTIFACT]


def _reset_duplicate_checker() -> None:
    """Dynamo logs a repeated break without its user stack; start each break afresh."""
    with contextlib.suppress(Exception):
        from torch._dynamo.utils import reset_graph_break_dup_checker

        reset_graph_break_dup_checker()


@contextlib.contextmanager
def recording(into: Recording) -> Iterator[Recording]:
    """Listen to Dynamo's graph-break log and skip reasons while the block runs.

    Nothing is printed: the artifact's loggers stop propagating for the duration (a
    learner's own ``TORCH_LOGS=graph_breaks`` output resumes afterwards).
    """
    listener = _Listener(into)
    saved = []
    for lg in _graph_break_loggers():
        saved.append((lg, lg.level, lg.propagate))
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
        lg.addHandler(listener)
    tls, previous = _skip_reasons_start()
    _reset_duplicate_checker()
    try:
        yield into
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(listener)
            lg.setLevel(level)
            lg.propagate = propagate
        into.skips.extend(_skip_reasons_end(tls, previous))


def _skip_reasons_start() -> tuple[Any, Any]:
    try:
        from torch._dynamo import eval_frame

        tls = eval_frame.dynamo_tls
        previous = tls.skip_reasons
        eval_frame.reset_skip_reasons()
        return tls, previous
    except Exception:  # moved in a later release: no skip reasons, the rest still works
        return None, None


def _skip_reasons_end(tls: Any, previous: Any) -> list[str]:
    if tls is None:
        return []
    try:
        found = list(tls.skip_reasons or [])
        tls.skip_reasons = previous
        return found
    except Exception:
        return []


def parse_break(message: str, error: str = "", call: int = 1) -> LoggedBreak | None:
    """A :class:`LoggedBreak` from one ``graph_breaks`` log message (None if it is not one).

    >>> msg = ('Graph break in user code at /tmp/m.py:3\\n'
    ...        'Graph Break Reason: Encountered graph break when attempting to trace CALL: a call:\\n\\n'
    ...        'Failed to trace builtin operator\\n  Explanation: Dynamo does not know how to trace print\\n\\n'
    ...        'User code traceback:\\n  File "/tmp/m.py", line 3, in f\\n    print("hi")\\n')
    >>> b = parse_break(msg)
    >>> (b.reason, os.path.basename(b.file), b.lineno, b.function, b.line, b.explanation)
    ('Failed to trace builtin operator', 'm.py', 3, 'f', 'print("hi")', 'Dynamo does not know how to trace print')
    """
    if not message.startswith("Graph break"):
        return None
    head, _, stack = message.partition("User code traceback:")
    if not stack:
        head, _, stack = message.partition("The graph break occurred in the following user code:")
    frames = list(_FRAME.finditer(stack))
    at = _AT.search(head.split("\n", 1)[0])
    if at:
        file, lineno = at.group("file"), int(at.group("line"))
    elif frames:
        file, lineno = frames[-1].group("file"), int(frames[-1].group("line"))
    else:
        file, lineno = "?", 0
    function, line = "?", ""
    for frame in reversed(frames):
        if frame.group("file") == file and int(frame.group("line")) == lineno:
            function, line = frame.group("func").strip(), frame.group("src").strip()
            break
    if not line and file != "?":
        line = linecache.getline(file, lineno).strip()
    reason_text = head.partition("Graph Break Reason:")[2] or error or head
    reason, explanation = _reason(reason_text)
    effect = only(*_SKIPPED_REST) if any(message.startswith(p) or p in reason_text for p in _UNRESUMABLE) else ""
    stack = tuple((m.group("file"), int(m.group("line")), m.group("func").strip(), m.group("src").strip())
                  for m in frames)
    return LoggedBreak(reason, file, lineno, function, line, explanation, effect, call, stack)


def _reason(text: str) -> tuple[str, str]:
    """(the break's type, its explanation) from Dynamo's reason text."""
    lines = [line.rstrip() for line in text.strip("\n").splitlines()]
    body = lines
    # "Encountered graph break when attempting to trace CALL: ...:" or "Failed to handle ...:"
    # introduce the real reason after a blank line
    if len(lines) > 2 and lines[0].endswith(":") and not lines[1].strip():
        body = lines[2:]
    head = next((line.strip() for line in body if line.strip()), "")
    explanation = next((line.strip()[len("Explanation:"):].strip() for line in body
                        if line.strip().startswith("Explanation:")), "")
    return first_line(head), first_line(explanation)


def skip_reason(skips: list[str], code: Any) -> str:
    """Why Dynamo skipped ``code``'s frame, from its skip reasons ("" if it did not say)."""
    name = getattr(code, "co_name", "")
    filename = getattr(code, "co_filename", "")
    mine = [s for s in skips if s.startswith(f"{name} (") and filename in s]
    if not mine:
        return ""
    return first_line(mine[0].split("): ", 1)[-1])


def describe_skip(skips: list[str], code: Any, name: str) -> str:
    """One sentence: why Dynamo made no graph and took no break for ``name``."""
    reason = skip_reason(skips, code).replace("Dynamo decided to skip the frame while tracing: ", "")
    if reason:
        return only(f"Dynamo skipped the frame of {name}: {reason}", f"Dynamo 跳过了 {name} 的帧：{reason}")
    return only(f"Dynamo traced {name} but found no tensor operation to put in a graph "
                "(everything ran as ordinary Python)",
                f"Dynamo 追踪了 {name}，但没有找到可以放进计算图的张量运算（全部作为普通 Python 运行）")

