"""bytecode(): original bytecode, Dynamo's transformed code, depyf and its fallback."""
from __future__ import annotations

import sys
import warnings

import pytest
import torch
import torch._dynamo

from fxcourse import FxCourseError, zoo
from fxcourse import Bytecode, bytecode


def add_one(x):
    return x + 1


def with_inner(n):
    def inner(k):
        return k * n
    return inner(2)


def print_break(x):
    x = x + 1
    print("hi")
    return x * 2


PY311 = sys.version_info[:2] == (3, 11)
needs_py311 = pytest.mark.skipif(not PY311, reason="bytecode goldens are written by Python 3.11")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_before_compile_shows_source_and_dis():
    view = bytecode(add_one)
    assert isinstance(view, Bytecode) and not view.compiled
    text = view.to_text()
    assert "not compiled yet" in text
    assert "def add_one(x):" in text and "BINARY_OP" in text and "RETURN_VALUE" in text
    assert [s.title for s in view.sections] == ["add_one"]


def test_nested_code_objects_have_no_addresses():
    text = bytecode(with_inner).to_text()
    assert '<code object inner, file "test_bytecode.py", line' in text
    assert "0x" not in text and "/" not in text.split("==")[1]


@needs_py311
def test_golden_plain(golden):
    golden("bytecode_add_one_py311", bytecode(add_one).to_text())


def test_after_compile_shows_entries_resume_functions_and_guards(capfd):
    compiled = torch.compile(print_break, backend="eager")
    compiled(torch.ones(2))
    capfd.readouterr()
    view = bytecode(compiled)  # the wrapper torch.compile returned is unwrapped
    assert view.compiled and view.entries == [1, 1]
    titles = [s.title for s in view.sections]
    assert titles[1] == "print_break, cache entry 0"
    assert titles[2].startswith("resume function torch_dynamo_resume_in_print_break_at_")
    entry = view.sections[1]
    assert entry.right_title == "transformed bytecode" and "__compiled_fn_0" in entry.right
    assert any(g.startswith("TENSOR_MATCH: check_tensor(L['x']") for g in entry.guards)
    text = view.to_text()
    assert "__resume_at_" in text and "_4226" not in text and "<id>" in text
    # What depyf 0.20 does with this graph-break function under torch 2.13 / Python 3.11:
    # plain depyf.decompile handles both the transformed code and the resume function.
    assert all(not s.note for s in view.sections), [s.note for s in view.sections]
    assert "graph_out_0 = __compiled_fn_0(x)" in entry.left
    assert capfd.readouterr().err == ""


@needs_py311
def test_golden_compiled_graph_break(golden):
    torch.compile(print_break, backend="eager")(torch.ones(2))
    golden("bytecode_print_break_py311", bytecode(print_break).to_text())


def test_depyf_failure_falls_back_to_dis_quietly(monkeypatch, capfd):
    import depyf

    def broken(code):
        sys.stderr.write("depyf spilling a long warning\n")
        warnings.warn("depyf is unhappy")
        raise RuntimeError("Failed to decompile: SWAP not supported\nsecond line")

    monkeypatch.setattr(depyf, "decompile", broken)
    torch.compile(print_break, backend="eager")(torch.ones(2))
    capfd.readouterr()
    view = bytecode(print_break)
    entry = view.sections[1]
    want = "depyf could not decompile this code (RuntimeError: Failed to decompile: SWAP not supported)"
    assert entry.note == f"{want}; read the bytecode instead"
    assert entry.left == f"# {entry.note}\n" and "LOAD_GLOBAL" in entry.right
    assert "second line" not in view.to_text()
    err = capfd.readouterr().err
    assert err == ""


def test_module_and_compiled_module():
    model, args = zoo.example("gate")
    assert bytecode(model).name == "Gate.forward" and not bytecode(model).compiled
    compiled = torch.compile(model, backend="eager")
    compiled(*args)
    view = bytecode(compiled)
    assert view.compiled and view.entries == [1, 1, 0]  # a resume function per branch; one ran
    html = view.to_html()
    assert "&lt;class" in html and "<class" not in html
    assert str(view) == view.to_text() and view._repr_html_() == html


def test_depyf_fails_naturally_on_gate_transformed_code(capfd):
    """Observed with depyf 0.20 / torch 2.13 / Python 3.11: the transformed code of a frame
    that breaks on a data-dependent ``if`` holds a SWAP depyf cannot decompile."""
    model, args = zoo.example("gate")
    torch.compile(model, backend="eager")(*args)
    capfd.readouterr()
    view = bytecode(model)
    entry = view.sections[1]
    assert entry.note.startswith("depyf could not decompile this code (DecompilationError: "
                                 "Failed to decompile instruction SWAP at offset")
    assert "LOAD_GLOBAL" in entry.right and entry.guards
    assert all(not s.note for s in view.sections[2:])  # the resume functions decompile
    assert capfd.readouterr().err == ""


def test_bound_method():
    model, _ = zoo.example("mlp")
    assert bytecode(model.forward).name == "MLP.forward"


@pytest.mark.parametrize("bad, match", [
    (None, "got None"), (42, "got int 42"), (len, "builtin_function_or_method len"),
    (zoo.MLP, "type MLP"),
])
def test_rejects_what_has_no_python_bytecode(bad, match):
    with pytest.raises(FxCourseError, match=match):
        bytecode(bad)


def test_source_unavailable_is_said_not_raised():
    namespace: dict = {}
    exec("def made_up(x):\n    return x - 1\n", namespace)
    view = bytecode(namespace["made_up"])
    assert view.sections[0].left.startswith("(source not available: OSError")
