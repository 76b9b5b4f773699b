"""What a notebook shows: every result object's text/plain is its text view, not a short repr."""
from __future__ import annotations

import pytest
import torch
from IPython.core.formatters import PlainTextFormatter

from fxcourse import capture, check, compare_capture, graph_diff, graph_table, zoo
from fxcourse import bytecode as bytecode_view


def _examples():
    model, args = zoo.example("mlp")
    gm = torch.fx.symbolic_trace(model)
    yield "graph_table", graph_table(gm)
    yield "graph_diff", graph_diff(gm, torch.fx.symbolic_trace(model))
    yield "check", check("lab00.1", lambda g: {})
    yield "capture", capture(model, *args)
    yield "bytecode", bytecode_view(lambda x: x + 1)
    yield "compare_capture", compare_capture(model, *args)


@pytest.mark.parametrize("name, result", list(_examples()), ids=lambda v: v if isinstance(v, str) else "")
def test_ipython_text_plain_is_the_text_view(name, result):
    shown = PlainTextFormatter()(result)
    assert shown == result.to_text(), name
    assert " at 0x" not in shown
    assert result._repr_html_() == result.to_html()


def test_text_width_is_fixed_inside_a_kernel(monkeypatch):
    """Notebook outputs must not depend on the terminal of whatever launched the kernel."""
    import IPython

    from fxcourse._render import terminal_width

    monkeypatch.setenv("COLUMNS", "300")
    assert terminal_width() == 300  # a real terminal's width is used outside notebooks

    class ZMQInteractiveShell:  # the shell class of an ipykernel kernel
        pass

    monkeypatch.setattr(IPython, "get_ipython", lambda: ZMQInteractiveShell())
    assert terminal_width() == 120
