"""Text hygiene shared by the viewers and the lab checkers: deterministic names, no paths,
no stray output.

PyTorch's output carries things that change from run to run or machine to machine:
addresses, object ids, absolute paths, uuids and process-wide counters in Dynamo's generated
names (``__compiled_fn_15_<uuid>``, ``__resume_at_40_16``). The functions here remove them, so
that viewers and checker feedback render the same bytes every time.
"""
from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import stat
import sys
import warnings
from typing import Any, Callable, Iterator

from ._lang import only
from .errors import FxCourseError, describe

__all__ = ["TORCHSCRIPT_DEPRECATION", "Renumber", "first_line", "fold", "is_torchscript_deprecation",
           "no_torchscript_warning", "one_line_error", "quiet", "scrub", "torch_logs"]

_UUID = r"[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}"
_CODE_REPR = re.compile(r"<code object (\S+) at 0x[0-9a-fA-F]+, file \"[^\"]*?([^/\"]+)\", line (\d+)>")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_HEX = re.compile(r"0x[0-9a-fA-F]{6,}")
_OBJ_ID = re.compile(r"(?<![\d.])\d{9,}\b")  # not the digits of a float
_PATH = re.compile(r"(?:[\w.\-~<>]*/)+([\w.\-]+\.(?:py|pyi|cpp|h))\b")
_GLOBAL_STATE = re.compile(r"(___check_global_state\(\) against )\{.*\}")


def scrub(text: str, *, ids: bool = False) -> str:
    """Remove addresses and directory parts of file paths (and, with ``ids``, object ids).

    >>> scrub('<code object f at 0x7f00deadbeef, file "/home/u/a.py", line 3>')
    '<code object f, file "a.py", line 3>'
    >>> scrub("# y = self.linear(x)  # src/fxcourse/zoo.py:48 in forward")
    '# y = self.linear(x)  # zoo.py:48 in forward'
    >>> scrub("___check_obj_id(G['torch'], 140254651029104)", ids=True)
    "___check_obj_id(G['torch'], <id>)"
    """
    text = _CODE_REPR.sub(r'<code object \1, file "\2", line \3>', text)
    text = _ADDRESS.sub("", text)
    text = _HEX.sub("0x…", text)
    if ids:
        text = _OBJ_ID.sub("<id>", text)
        text = _GLOBAL_STATE.sub(r"\1{…}", text)
    return _PATH.sub(r"\1", text)


class Renumber:
    """Give Dynamo's generated names small numbers in order of first appearance.

    One instance is shared by everything one viewer renders, so the same generated name
    gets the same new name everywhere in its output.

    >>> r = Renumber()
    >>> r("__compiled_fn_15_4226d1dd_b628_4c97_9125_ac5a824b48b7(x); __resume_at_40_16(y)")
    '__compiled_fn_0(x); __resume_at_40_0(y)'
    >>> r("__compiled_fn_15_4226d1dd_b628_4c97_9125_ac5a824b48b7; __compiled_fn_20")
    '__compiled_fn_0; __compiled_fn_1'
    """

    _FAMILIES = (
        ("compiled", re.compile(rf"(__compiled_fn_)(\d+)(?:_{_UUID})?")),
        ("resume", re.compile(r"(__resume_at_\d+_)(\d+)")),
        ("builtins", re.compile(r"(__builtins_dict___)(\d+)")),
        ("temp", re.compile(r"(__temp_)(\d+)")),
    )

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, int]] = {name: {} for name, _ in self._FAMILIES}

    def __call__(self, text: str) -> str:
        for family, pattern in self._FAMILIES:
            seen = self._seen[family]

            def repl(m: re.Match[str], seen: dict[str, int] = seen) -> str:
                number = seen.setdefault(m.group(0), len(seen))
                return f"{m.group(1)}{number}"

            text = pattern.sub(repl, text)
        return text


def first_line(text: str, limit: int = 160) -> str:
    """The first non-blank line of ``text``, scrubbed, whitespace collapsed, cut to ``limit``.

    >>> first_line("\\n  Data-dependent   branching\\n  Explanation: ...")
    'Data-dependent branching'
    """
    for line in str(text).splitlines():
        if line.strip():
            line = " ".join(scrub(line).split())
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def fold(lines: list[str], limit: int, how: str) -> list[str]:
    """The first ``limit`` lines, then one line saying how many were left out and ``how``
    to see them (all lines when there are at most ``limit``, or when ``limit`` is None).

    >>> fold(["a", "b", "c"], 2, "pass full=True")
    ['a', 'b', '… 1 more line (pass full=True)']
    >>> fold(["a"], 2, "pass full=True")
    ['a']
    """
    if limit is None or len(lines) <= limit:
        return list(lines)
    hidden = len(lines) - limit
    return [*lines[:limit], only(f"… {hidden} more line{'s' if hidden != 1 else ''} ({how})",
                                 f"… 另有 {hidden} 行（{how}）")]


def one_line_error(exc: BaseException, limit: int = 160) -> str:
    """``Type: first line of the message``, free of addresses and paths.

    >>> one_line_error(ValueError("bad value at 0x7f00deadbeef\\nmore"))
    'ValueError: bad value'
    """
    message = first_line(str(exc), limit)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class _Sinks(logging.Filter):
    """The one filter that ``quiet`` and ``torch_logs`` put on the console handlers.

    Every block that is active (they nest) registers a sink: a function that takes a record and
    says whether it consumed it. Each record is offered to every active sink, innermost first, and
    is printed only if none consumed it. One shared filter, rather than one per block, so that a
    block inside another still sees the records (a filter that returns False hides the record from
    the filters after it).
    """

    def __init__(self) -> None:
        super().__init__()
        self.sinks: list[Callable[[logging.LogRecord], bool]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        consumed = False
        for sink in reversed(list(self.sinks)):
            consumed = sink(record) or consumed
        return not consumed


_SINKS = _Sinks()


def _attach_sinks() -> None:
    """Put the shared filter on every console handler that lacks it (torch makes new handlers
    whenever its log settings change)."""
    for handler in _console_handlers():
        if _SINKS not in handler.filters:
            handler.addFilter(_SINKS)


@contextlib.contextmanager
def _sink(consume: Callable[[logging.LogRecord], bool]) -> Iterator[None]:
    _SINKS.sinks.append(consume)
    _attach_sinks()
    try:
        yield
    finally:
        _SINKS.sinks.remove(consume)
        if not _SINKS.sinks:  # the last block ended: leave no filter behind
            for handler in _every_handler():
                if _SINKS in handler.filters:
                    handler.removeFilter(_SINKS)
        else:
            _attach_sinks()


def _every_handler() -> list[logging.Handler]:
    loggers = [logging.getLogger()] + [
        obj for obj in logging.Logger.manager.loggerDict.values() if isinstance(obj, logging.Logger)
    ]
    handlers = [h for lg in loggers for h in lg.handlers]
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    return list({id(h): h for h in handlers}.values())  # each once, though several loggers share it


def _keep_once(records: list[logging.LogRecord], seen: set[int], record: logging.LogRecord) -> None:
    """Append ``record`` unless it is already there (a record passes the filter once per handler it reaches);
    ``seen`` holds the ids of ``records``, so a block that keeps many thousands stays linear."""
    if id(record) not in seen:  # the records are kept alive in the list: no id is reused while there
        seen.add(id(record))
        records.append(record)


def _to_console(handler: logging.Handler) -> bool:
    """Handlers that print to the terminal or notebook (not files, not trace collectors).

    Recognised by where they write, not by their class: torch's console handler was a
    ``logging.StreamHandler`` in 2.13 and is a plain ``logging.Handler`` with a ``stream``
    property (following ``sys.stderr``) in 2.14.
    """
    if handler is logging.lastResort:
        return True
    if isinstance(handler, logging.FileHandler):
        return False
    try:
        stream = getattr(handler, "stream", None)
    except Exception:  # a property that fails: not a handler we can reason about
        return False
    if stream is None:
        return False
    if any(stream is s for s in (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__)):
        return True
    try:  # a stream backed by a regular file on disk, whatever its name says, unless that file
        # is where this process's stderr or stdout goes (2>log): then it is the console's place
        here = os.fstat(stream.fileno())
        if not stat.S_ISREG(here.st_mode):
            return True
        return any(_same_file(here, fd) for fd in (1, 2))
    except Exception:  # no file descriptor (a notebook's stream, a StringIO)
        pass
    name = getattr(stream, "name", None)
    return not (isinstance(name, str) and os.sep in name)  # not a file on disk


def _same_file(status: os.stat_result, fd: int) -> bool:
    try:
        return os.path.samestat(status, os.fstat(fd))
    except OSError:
        return False


def _console_handlers() -> list[logging.Handler]:
    """Every handler of every logger (and Python's last resort) that prints to the console."""
    return [h for h in _every_handler() if _to_console(h)]


@contextlib.contextmanager
def quiet(*, stderr: bool = True) -> Iterator[list[str]]:
    """Record warnings and log records instead of letting them reach the notebook.

    Yields a list that is filled, when the block ends, with one line per distinct warning
    or log record. Every warning is recorded, even one Python would show only once or one
    a ``-W error`` filter would raise. With ``stderr=True`` anything written to
    ``sys.stderr`` is dropped as well. Blocks nest: an outer block also gets the log records of
    an inner one, but not its warnings (the inner block records those). Main thread only.
    """
    notes: list[str] = []
    records: list[logging.LogRecord] = []
    seen: set[int] = set()
    sink = io.StringIO()
    try:
        with warnings.catch_warnings(record=True) as caught, \
                _sink(lambda record: _keep_once(records, seen, record) or True):
            warnings.simplefilter("always")
            with contextlib.redirect_stderr(sink) if stderr else contextlib.nullcontext():
                yield notes
    finally:
        lines = [f"{w.category.__name__}: {first_line(str(w.message))}" for w in caught]
        for record in records:
            with contextlib.suppress(Exception):
                lines.append(f"log {record.levelname}: {first_line(record.getMessage())}")
        notes.extend(dict.fromkeys(lines))


@contextlib.contextmanager
def torch_logs(*names: str, **switches: Any) -> Iterator[list[logging.LogRecord]]:
    """Collect torch's log records in a list instead of letting torch print them.

    With ``switches``, torch's logs are turned on for the block with
    ``torch._logging.set_logs(**switches)`` (``graph_breaks=True``, ``dynamic=logging.DEBUG``, ...)
    and put back as they were after it. Blocks nest (an outer block, or ``quiet()``, still gets
    the records of an inner one); call ``set_logs`` through ``torch_logs(**switches)``, not inside
    the block, since torch then makes new handlers the block has not seen. For the main
    thread: like ``quiet`` (which redirects ``sys.stderr``), blocks change process-wide state, so
    two threads must not hold overlapping blocks. With ``names``, only the records of those loggers are
    kept (``"torch._dynamo"``, or an artifact's logger such as ``"torch.__graph_breaks"``); the
    others are dropped, not printed. Each record is kept once, however many handlers saw it.

    Torch prints its log lines with a time, a process id and a path, which a stored notebook
    output cannot hold; the records themselves (``record.getMessage()``, ``record.name``,
    ``record.levelname``) are what a lesson reads. Console handlers are found by where they
    write, whatever their class (it changed between releases).
    """
    import torch._logging

    odd = [n for n in names if not isinstance(n, str) or not (n == "torch" or n.startswith("torch."))]
    if odd:  # only torch's records are kept: any other name would give an empty list
        raise FxCourseError(got=f"the logger name {describe(odd[0])}", where="torch_logs",
                            accepted="names of torch's loggers as str, e.g. \"torch._dynamo\" or \"torch.__graph_breaks\"",
                            fix="pass torch loggers' names, or no name for every torch record; switch logs on with "
                                "keywords such as graph_breaks=True",
                            zh=f"torch_logs：{describe(odd[0])} 不是 torch 日志记录器的名字，只会得到空列表；需要字符串形式的 "
                               "torch 日志记录器名，例如 \"torch._dynamo\"。修复：传入 torch 日志记录器名，或不传名字以收集全部 torch "
                               "记录；用关键字参数（如 graph_breaks=True）打开日志。")
    records: list[logging.LogRecord] = []
    seen: set[int] = set()

    def keep(record: logging.LogRecord) -> bool:
        if record.name != "torch" and not record.name.startswith("torch."):
            return False  # not torch's: printed as usual (unless an outer block takes it)
        if not names or record.name in names:
            _keep_once(records, seen, record)
        return True  # never printed

    saved = _log_settings() if switches else None
    with _sink(keep):
        try:
            if switches:
                try:
                    torch._logging.set_logs(**switches)
                except (TypeError, ValueError) as exc:  # a switch set_logs does not have, or a wrong level
                    shown = ", ".join(f"{k}={v!r}" for k, v in switches.items())
                    raise FxCourseError(
                        got=f"{shown} ({one_line_error(exc)})", where="torch_logs",
                        accepted="switches of torch._logging.set_logs: a log's name with True/False "
                                 "(graph_breaks=True) or a logging level (dynamo=logging.DEBUG)",
                        fix="check the name and value against help(torch._logging.set_logs)",
                        zh=f"torch_logs：{shown} 不被 torch._logging.set_logs 接受；需要日志名配 "
                           "True/False（graph_breaks=True）或日志级别（dynamo=logging.DEBUG）。修复：对照 "
                           "help(torch._logging.set_logs) 检查名字和取值。") from None
                _attach_sinks()  # set_logs made new handlers
            yield records
        finally:
            if switches:
                _restore_log_settings(saved)
                _attach_sinks()


def _torch_loggers() -> list[logging.Logger]:
    return [lg for name, lg in logging.Logger.manager.loggerDict.items()
            if isinstance(lg, logging.Logger) and (name == "torch" or name.startswith("torch."))]


def _log_settings() -> Any:
    """torch's log settings (a copy; None where the private API moved) and the level and
    propagation of every torch logger (set_logs resets them; a learner may have set them)."""
    import copy

    try:
        from torch._logging import _internal

        state = copy.deepcopy(_internal._get_log_state())
    except Exception:
        state = None
    return state, {lg: (lg.level, lg.propagate) for lg in _torch_loggers()}


def _restore_log_settings(saved: Any) -> None:
    """Put back what ``_log_settings`` saved; torch's defaults where the private API moved."""
    import torch._logging

    state, loggers = saved
    try:
        from torch._logging import _internal

        if state is None:
            raise LookupError("no saved settings")
        _internal._set_log_state(state)
        _internal._init_logs()
    except Exception:
        torch._logging.set_logs()
    for lg, (level, propagate) in loggers.items():
        lg.setLevel(level)
        lg.propagate = propagate


# TorchScript's entry points (torch.jit.trace, trace_module, script, save, load, freeze, ...) warn
# on every call that they are deprecated. The category changed between releases
# (DeprecationWarning in 2.13, FutureWarning in 2.14); the text did not, so the warning is
# recognised by what it says. Case-sensitive in both uses ((?-i:...): warnings.filterwarnings
# would otherwise match without case). Other TorchScript warnings, such as "`optimize` is
# deprecated" or the lite interpreter's, are not this one and still show.
TORCHSCRIPT_DEPRECATION = r"(?-i:`torch\.jit\.\w+` is (deprecated|not supported in Python))"


def is_torchscript_deprecation(warning: Any) -> bool:
    """Whether ``warning`` (a ``warnings.WarningMessage``, a ``Warning`` or its text) is
    TorchScript's "this entry point is deprecated" warning, whatever its category.

    >>> is_torchscript_deprecation("`torch.jit.trace` is deprecated. Please switch to `torch.compile`.")
    True
    >>> is_torchscript_deprecation(FutureWarning("`torch.jit.script` is deprecated. Please switch ..."))
    True
    >>> is_torchscript_deprecation("Converting a tensor to a Python boolean might cause the trace ...")
    False
    """
    message = getattr(warning, "message", warning)
    return re.match(TORCHSCRIPT_DEPRECATION, str(message)) is not None


@contextlib.contextmanager
def no_torchscript_warning() -> Iterator[None]:
    """Silence TorchScript's deprecation warning (any category) for one block; every other
    warning, the tracer's among them, still shows.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     with no_torchscript_warning():
    ...         warnings.warn("`torch.jit.trace` is deprecated. Please switch ...", FutureWarning)
    ...         warnings.warn("something else", UserWarning)
    >>> [str(w.message) for w in seen]
    ['something else']
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=TORCHSCRIPT_DEPRECATION)
        yield
