"""What torch prints, kept out of lessons whatever the release: TorchScript's deprecation
warning (its category changed from DeprecationWarning in 2.13 to FutureWarning in 2.14) and
torch's log records (its console handler changed from a StreamHandler to a plain Handler)."""
from __future__ import annotations

import contextlib
import io
import logging
import subprocess
import sys
import warnings

import pytest
import torch
import torch._dynamo

from fxcourse import is_torchscript_deprecation, no_torchscript_warning, torch_logs
from fxcourse._text import _to_console, quiet


class StderrFollower(logging.Handler):
    """Like torch 2.14's console handler: not a StreamHandler, a ``stream`` property."""

    @property
    def stream(self):
        return sys.stderr

    def emit(self, record):
        self.stream.write(self.format(record) + "\n")


def test_console_handlers_are_recognised_by_where_they_write(tmp_path):
    assert _to_console(StderrFollower())
    assert _to_console(logging.StreamHandler(sys.stderr))  # torch 2.13's kind
    assert _to_console(logging.StreamHandler(io.StringIO()))  # a notebook's captured stream
    file_handler = logging.FileHandler(tmp_path / "log.txt")
    try:
        assert not _to_console(file_handler)
    finally:
        file_handler.close()
    with open(tmp_path / "other.txt", "w") as stream:
        assert not _to_console(logging.StreamHandler(stream))  # a file on disk
    assert not _to_console(logging.NullHandler())


def test_torch_installs_a_handler_that_is_recognised():
    torch._logging.set_logs(graph_breaks=True)
    try:
        handlers = [h for lg in (logging.getLogger(n) for n in ("torch", "torch._dynamo")) for h in lg.handlers
                    if type(h).__module__.startswith("torch")]  # not pytest's own
        assert handlers and all(_to_console(h) for h in handlers), [type(h) for h in handlers]
    finally:
        torch._logging.set_logs()


def _break(x):
    x = x + 1
    torch._dynamo.graph_break()
    return x * 2


def _compile_with_a_break():
    torch._dynamo.reset()
    torch.compile(_break, backend="eager")(torch.ones(3))


def test_torch_logs_collects_records_and_prints_nothing(capfd):
    with torch_logs(graph_breaks=True) as records:
        _compile_with_a_break()
    out = capfd.readouterr()
    assert out.err == "" and out.out == ""
    breaks = [r for r in records if r.name.endswith("__graph_breaks")]
    assert len(breaks) == 1 and "graph_break" in breaks[0].getMessage()
    assert len({id(r) for r in records}) == len(records)  # each record once


def test_torch_logs_keeps_only_the_loggers_named(capfd):
    with torch_logs("torch.no_such_logger", graph_breaks=True) as records:
        _compile_with_a_break()
    assert records == [] and capfd.readouterr().err == ""


@pytest.mark.parametrize("handler_kind", [logging.StreamHandler, StderrFollower])
def test_torch_logs_works_whatever_the_handler_class(capfd, handler_kind):
    """The move that broke the lectures: swap torch's console handler for another class."""
    torch._logging.set_logs(graph_breaks=True)
    loggers = [lg for name, lg in logging.Logger.manager.loggerDict.items()
               if name.startswith("torch") and isinstance(lg, logging.Logger) and lg.handlers]
    saved = {lg: lg.handlers for lg in loggers}
    try:
        for lg in loggers:
            lg.handlers = [handler_kind() if _to_console(h) else h for h in lg.handlers]
        with torch_logs() as records:
            _compile_with_a_break()
    finally:
        for lg, handlers in saved.items():
            lg.handlers = handlers
        torch._logging.set_logs()
    assert any(r.name.endswith("__graph_breaks") for r in records)
    assert capfd.readouterr().err == ""


def test_torch_logs_leaves_other_records_and_handlers_alone(capfd):
    other = logging.getLogger("fxcourse.test.other")
    handler = logging.StreamHandler(sys.stderr)
    other.addHandler(handler)
    try:
        with torch_logs(graph_breaks=True):
            other.warning("not torch's")
        assert "not torch's" in capfd.readouterr().err
    finally:
        other.removeHandler(handler)
    torch._logging.set_logs(graph_breaks=True)
    try:
        assert all(not h.filters for lg in (logging.getLogger("torch"), logging.getLogger("torch._dynamo"))
                   for h in lg.handlers)
    finally:
        torch._logging.set_logs()


def test_quiet_catches_torch_records_too(capfd):
    torch._logging.set_logs(graph_breaks=True)
    try:
        with quiet() as notes:
            _compile_with_a_break()
    finally:
        torch._logging.set_logs()
    assert capfd.readouterr().err == ""
    assert any(n.startswith("log ") and "graph" in n.lower() for n in notes), notes


@pytest.mark.parametrize("category", [DeprecationWarning, FutureWarning, UserWarning])
def test_the_deprecation_is_recognised_by_its_text(category):
    warning = category("`torch.jit.trace` is deprecated. Please switch to `torch.compile` or `torch.export`.")
    assert is_torchscript_deprecation(warning)
    assert is_torchscript_deprecation("`torch.jit.script` is not supported in Python 3.14+ and may break.")
    assert not is_torchscript_deprecation(category("Converting a tensor to a Python boolean might cause ..."))
    assert not is_torchscript_deprecation("see `torch.jit.trace` is deprecated")  # not at the start


@pytest.mark.parametrize("category", [DeprecationWarning, FutureWarning])
def test_no_torchscript_warning_silences_it_in_any_category(category):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with no_torchscript_warning():
            warnings.warn("`torch.jit.save` is deprecated. Please switch to `torch.export`.", category)
            warnings.warn("a different warning", category)
    assert [str(w.message) for w in seen] == ["a different warning"]


def test_no_torchscript_warning_on_a_real_trace_keeps_the_tracer_warning():
    def branchy(x):
        return x * 2 if x.sum() > 0 else x

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with no_torchscript_warning():
            torch.jit.trace(branchy, (torch.ones(2),), check_trace=False)
    kinds = {w.category.__name__ for w in seen}
    assert kinds == {"TracerWarning"}, [(w.category.__name__, str(w.message)[:60]) for w in seen]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        torch.jit.trace(branchy, (torch.ones(2),), check_trace=False)
    assert any(is_torchscript_deprecation(w) for w in seen)


def test_the_helpers_are_public_names():
    import fxcourse

    assert {"torch_logs", "no_torchscript_warning", "is_torchscript_deprecation"} <= set(fxcourse.__all__)


# -- blocks nest: found by attacking the first version, whose filters hid records from each other --
_DYNAMO = logging.getLogger("torch._dynamo")


def _printed(body):
    """What body() returns, and the lines torch printed (its handler follows sys.stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        out = body()
    return out, [line for line in err.getvalue().splitlines() if line.strip()]


def _messages(records):
    return [r.getMessage() for r in records]


def test_torch_logs_inside_quiet_gets_the_records_and_so_does_quiet():
    def body():
        with quiet(stderr=False) as notes:
            with torch_logs() as records:
                _DYNAMO.warning("probe one")
        return _messages(records), notes
    (records, notes), printed = _printed(body)
    assert records == ["probe one"] and notes == ["log WARNING: probe one"] and printed == []


def test_nested_torch_logs_both_get_the_records():
    def body():
        with torch_logs() as outer:
            with torch_logs() as inner:
                _DYNAMO.warning("probe two")
        return _messages(outer), _messages(inner)
    assert _printed(body) == ((["probe two"], ["probe two"]), [])


def test_an_inner_block_with_switches_puts_the_outer_settings_back():
    from torch._logging import _internal

    def body():
        with torch_logs(graph_breaks=True) as outer:
            with torch_logs(recompiles=True):
                pass
            _DYNAMO.warning("probe three")
            still_on = _internal.log_state.is_artifact_enabled("graph_breaks")
        return _messages(outer), still_on
    assert _printed(body) == ((["probe three"], True), [])


def test_a_users_own_log_settings_survive_the_block():
    from torch._logging import _internal

    torch._logging.set_logs(graph_breaks=True)
    try:
        with torch_logs(recompiles=True):
            pass
        assert _internal.log_state.is_artifact_enabled("graph_breaks")
        assert not _internal.log_state.is_artifact_enabled("recompiles")
    finally:
        torch._logging.set_logs()


def test_no_filter_is_left_behind_even_when_the_body_raises():
    from fxcourse._text import _every_handler

    for block in (lambda: torch_logs(graph_breaks=True), quiet):
        with pytest.raises(ValueError):
            with block():
                raise ValueError("the learner's error")
    assert not [h for h in _every_handler() if any(type(f).__name__ == "_Sinks" for f in h.filters)]


def test_the_filter_and_the_recogniser_agree_on_case():
    shouting = "`TORCH.JIT.TRACE` IS DEPRECATED. Please switch ..."
    assert not is_torchscript_deprecation(shouting)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with no_torchscript_warning():
            warnings.warn(shouting, FutureWarning)
    assert [str(w.message) for w in seen] == [shouting]


def test_other_torchscript_deprecations_are_not_this_one():
    """Only the entry points' "is deprecated" warning: a deprecated argument still shows."""
    assert not is_torchscript_deprecation("`optimize` is deprecated and has no effect. Use `with torch.jit.optimized_execution()` instead")
    assert not is_torchscript_deprecation("Lite Interpreter is deprecated. Please consider switching to ExecuTorch.")


def test_a_log_file_opened_by_a_relative_path_is_not_the_console(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open("run.log", "w") as stream:  # its name holds no path separator
        handler = logging.StreamHandler(stream)
        assert not _to_console(handler)
        other = logging.getLogger("fxcourse.test.file")
        other.addHandler(handler)
        try:
            with quiet():
                other.warning("kept in the file")
        finally:
            other.removeHandler(handler)
    assert "kept in the file" in (tmp_path / "run.log").read_text()


def test_logger_levels_a_learner_set_survive_the_block():
    dynamo, root = logging.getLogger("torch._dynamo"), logging.getLogger("torch")
    before = dynamo.level, root.propagate
    dynamo.setLevel(logging.INFO)
    root.propagate = True  # torch's own set-up turns it off
    try:
        with torch_logs(graph_breaks=True):
            pass
        assert dynamo.level == logging.INFO and root.propagate is True
    finally:
        dynamo.setLevel(before[0])
        root.propagate = before[1]


def test_a_handler_on_stderr_redirected_to_a_file_is_still_the_console(tmp_path):
    """`python script.py 2>log`: a handler writing to fd 2 through its own file object."""
    program = (
        "import logging, sys\n"
        "from fxcourse._text import _to_console, quiet\n"
        "handler = logging.StreamHandler(open(2, 'w', closefd=False))\n"
        "other = logging.getLogger('fxcourse.test.fd2')\n"
        "other.addHandler(handler)\n"
        "with quiet() as notes:\n"
        "    other.warning('should be quiet')\n"
        "print(_to_console(handler), notes)\n")
    with open(tmp_path / "err.txt", "w") as err:
        run = subprocess.run([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=err, text=True,
                             timeout=60)
    assert run.returncode == 0
    assert run.stdout.strip() == "True ['log WARNING: should be quiet']"
    assert (tmp_path / "err.txt").read_text() == ""
