"""fxcourse.check for lab07: reference answers pass, stubs are not implemented, classic mistakes are named."""
from __future__ import annotations

import pytest
import torch

from fxcourse import check
from fxcourse.checks.lab07 import Router


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- reference answers -------------------------------------------------------------------

def no_breaks(x):
    y = torch.sin(x) * 2
    scale = y.abs().max()
    return torch.where(y.sum() > 0, y / scale, -y) + 1


def compile_once(fn, backend):
    compiled = torch.compile(fn, backend=backend)

    def run(x):
        torch._dynamo.mark_dynamic(x, 0)
        return compiled(x)
    return run


def fail_guard(x, kind):
    return {"shape": lambda: torch.cat([x, x]), "dtype": lambda: x.double(),
            "requires_grad": lambda: x.clone().requires_grad_(),
            "stride": lambda: x.t().contiguous().t()}[kind]()


class CondRouter(Router):
    def forward(self, x):
        return torch.cond(x.norm() > 2.0, lambda x: torch.relu(self.large(x)),
                          lambda x: self.small(x) * 0.5, (x,))


class StubRouter(Router):
    def forward(self, x):
        raise NotImplementedError


@pytest.mark.parametrize("task_id, answer", [
    ("lab07.1", no_breaks),
    ("lab07.2", compile_once),
    ("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend, dynamic=True)),
    ("lab07.3", fail_guard),
    ("lab07.4", CondRouter),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id, answer", [
    ("lab07.1", _stub), ("lab07.2", _stub), ("lab07.3", _stub), ("lab07.4", StubRouter),
])
def test_stub_is_not_implemented(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "not_implemented", result.to_text()


# -- lab07.1 -------------------------------------------------------------------------------

def _keeps_item(x):
    y = torch.sin(x) * 2
    scale = y.abs().max().item()
    return torch.where(y.sum() > 0, y / scale, -y) + 1


def _keeps_if(x):
    y = torch.sin(x) * 2
    scale = y.abs().max()
    if y.sum() > 0:
        return y / scale + 1
    return -y + 1


def _keeps_print(x):
    print("scale")
    return no_breaks(x)


def test_item_hidden_by_fullgraph_is_caught_by_a_plain_compile():
    result = check("lab07.1", _keeps_item)
    assert result.status == "wrong" and "fullgraph=True passed" in result.en
    assert "item()" in result.en and "item()" in result.zh and "1 graph" in result.expected


def test_a_python_if_is_named():
    result = check("lab07.1", _keeps_if)
    assert result.status == "wrong" and "torch.where" in result.en
    assert result.got.startswith("Unsupported: Data-dependent branching")


def test_a_print_is_named_and_not_printed(capsys):
    result = check("lab07.1", _keeps_print)
    assert result.status == "wrong" and "print" in result.en
    assert capsys.readouterr().out == ""


def test_a_wrong_value_is_shown():
    result = check("lab07.1", lambda x: torch.sin(x) * 2 + 1)
    assert result.status == "wrong" and "max abs difference" in result.got


# -- lab07.2 -------------------------------------------------------------------------------

def test_plain_compile_recompiles_once_and_says_why():
    result = check("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend))
    assert result.status == "wrong" and "seen it change" in result.en
    assert result.got.startswith("2 compiles") and "s77" in result.got


def test_marking_the_wrong_dim_is_named():
    def wrong_dim(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.mark_dynamic(x, 1)
            return compiled(x)
        return run
    result = check("lab07.2", wrong_dim)
    assert result.status == "wrong" and "marked dim 1" in result.en and "mark_dynamic(x, 0)" in result.en


def test_ignoring_the_backend_is_named():
    result = check("lab07.2", lambda fn, backend: torch.compile(fn, backend="eager", dynamic=True))
    assert result.status == "wrong" and "backend=backend" in result.en


def test_static_shapes_compile_every_time():
    result = check("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend, dynamic=False))
    assert result.status == "wrong" and result.got.startswith("3 compiles")


# -- lab07.3 -------------------------------------------------------------------------------

def test_transpose_is_a_shape_change_not_a_stride_change():
    result = check("lab07.3", lambda x, kind: x.t() if kind == "stride" else fail_guard(x, kind))
    assert result.status == "wrong" and "x.t()" in result.en
    assert "size mismatch" in result.got and "stride" in result.expected


def test_changing_two_things_fails_the_wrong_guard_first():
    result = check("lab07.3", lambda x, kind: torch.cat([x, x]).double() if kind == "shape" else fail_guard(x, kind))
    assert result.status == "wrong" and "dtype mismatch" in result.got


def test_an_unchanged_tensor_fails_no_guard():
    result = check("lab07.3", lambda x, kind: x.float() if kind == "dtype" else fail_guard(x, kind))
    assert result.status == "wrong" and result.got.startswith("no recompile")


# -- lab07.4 -------------------------------------------------------------------------------

def test_a_python_if_cannot_be_exported():
    result = check("lab07.4", Router)
    assert result.status == "wrong" and "torch.cond" in result.en


def test_torch_where_exports_but_is_not_cond():
    class WhereRouter(Router):
        def forward(self, x):
            return torch.where(x.norm() > 2.0, torch.relu(self.large(x)), self.small(x) * 0.5)
    result = check("lab07.4", WhereRouter)
    assert result.status == "wrong" and "no cond" in result.en


def test_swapped_branches_are_wrong():
    class Swapped(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda x: self.small(x) * 0.5,
                              lambda x: torch.relu(self.large(x)), (x,))
    result = check("lab07.4", Swapped)
    assert result.status == "wrong" and "different result" in result.en


def test_checkers_leave_dynamo_config_alone():
    before = (torch._dynamo.config.capture_scalar_outputs, torch._dynamo.config.recompile_limit)
    check("lab07.1", _keeps_item)
    check("lab07.2", compile_once)
    assert (torch._dynamo.config.capture_scalar_outputs, torch._dynamo.config.recompile_limit) == before
