"""Lab 10 checkers: reference answers pass, stubs are "not yet implemented", and the usual
mistakes are rejected with a message naming them (in both languages)."""
from __future__ import annotations


import numpy as np
import pytest
import torch
from torch.export import Dim

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint, lowering, zoo


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- lab10.1 ---------------------------------------------------------------------------------

def test_shared_batch_reference_passes():
    expect_passed("lab10.1", solution("lab10", "export_shared_batch"))


def test_shared_batch_with_dim_auto_passes_too():
    def with_auto(model, x, y):
        return torch.export.export(model, (x, y), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}})
    expect_passed("lab10.1", with_auto)


def test_shared_batch_static_export_is_named():
    result = expect_wrong("lab10.1", lambda model, x, y: torch.export.export(model, (x, y)))
    assert "batch was specialised" in result.en and "被特化" in result.zh


def test_shared_batch_two_dims_is_named():
    def two_dims(model, x, y):
        return torch.export.export(model, (x, y), dynamic_shapes={"x": {0: Dim("bx")}, "y": {0: Dim("by")}})
    result = expect_wrong("lab10.1", two_dims)
    assert "a Dim each" in result.en and "Suggested fixes" in result.en and "各用了一个 Dim" in result.zh


def test_shared_batch_feature_dim_marked_dynamic_is_named():
    def every_dim(model, x, y):
        b = Dim("batch")
        return torch.export.export(model, (x, y), dynamic_shapes={"x": {0: b, 1: Dim("f")}, "y": {0: b}})
    result = expect_wrong("lab10.1", every_dim)
    assert "Only the batch, dimension 0" in result.en and "只有批维度" in result.zh


def test_shared_batch_returning_the_module_is_named():
    def module(model, x, y):
        b = Dim("batch")
        return torch.export.export(model, (x, y), dynamic_shapes={"x": {0: b}, "y": {0: b}}).module()
    result = expect_wrong("lab10.1", module)
    assert "ExportedProgram itself" in result.en and "ExportedProgram 本身" in result.zh


# -- lab10.2 ---------------------------------------------------------------------------------

def test_cond_gate_reference_passes():
    expect_passed("lab10.2", solution("lab10", "ExportableGate"))


def test_cond_gate_with_named_branches_passes_too():
    def relu_branch(y):
        return y.clamp(min=0)

    def neg_branch(y):
        return y.neg()

    class Named(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.cond(torch.sum(y) > 0, relu_branch, neg_branch, [y])
    expect_passed("lab10.2", Named)


def test_cond_gate_python_if_is_named():
    result = expect_wrong("lab10.2", zoo.Gate)
    assert "data-dependent" in result.en and "数据相关" in result.zh


def test_cond_gate_swapped_branches_is_named():
    class Swapped(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.cond(y.sum() > 0, lambda t: -t, lambda t: torch.relu(t), (y,))
    result = expect_wrong("lab10.2", Swapped)
    assert "swapped" in result.en and "弄反" in result.zh


def test_cond_gate_torch_where_is_named():
    class Where(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(y.sum() > 0, torch.relu(y), -y)
    result = expect_wrong("lab10.2", Where)
    assert "no cond node" in result.en and "没有 cond 节点" in result.zh


def test_cond_gate_branch_on_x_is_wrong():
    class OnX(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.cond(x.sum() > 0, lambda t: torch.relu(t), lambda t: -t, (y,))
    result = expect_wrong("lab10.2", OnX)
    assert "differs from zoo.Gate" in result.en or "swapped" in result.en


# -- lab10.3 ---------------------------------------------------------------------------------

def _compile(stage="linalg-on-tensors", dynamic=True, convert=True, eager=False):
    import iree.compiler as ireec
    import iree.runtime as ireert

    def compile_with_iree(model, example):
        shapes = {"x": {0: Dim("batch")}} if dynamic else None
        low = lowering(model, example, dynamic_shapes=shapes, stages=(stage,))
        vmfb = ireec.compile_str(low.stage(stage).text, target_backends=["llvm-cpu"],
                                 extra_args=["--iree-llvmcpu-target-cpu=host"])
        module = ireert.load_vm_flatbuffer(vmfb, driver="local-task")

        def run(x):
            if eager:
                return model(x)
            out = np.asarray(module.main(x.numpy()).to_host())
            return torch.from_numpy(out) if convert else out
        return run
    return compile_with_iree


def test_iree_reference_passes():
    expect_passed("lab10.3", solution("lab10", "compile_with_iree"))


def test_iree_through_the_torch_dialect_passes_too():
    expect_passed("lab10.3", _compile(stage="torch"))


def test_iree_static_batch_is_named():
    result = expect_wrong("lab10.3", _compile(dynamic=False))
    assert "static batch" in result.en and "批维度是静态的" in result.zh


def test_iree_numpy_result_is_named():
    result = expect_wrong("lab10.3", _compile(convert=False))
    assert "return a torch.Tensor" in result.en and "请返回 torch.Tensor" in result.zh


def test_iree_calling_the_model_is_named():
    result = expect_wrong("lab10.3", _compile(eager=True))
    assert "runs the PyTorch model" in result.en and "PyTorch 模型" in result.zh


def test_iree_dynamic_stablehlo_is_named():
    result = expect_wrong("lab10.3", _compile(stage="stablehlo"))
    assert "dynamic_broadcast_in_dim" in result.en and "StableHLO" in result.zh


# -- every task ------------------------------------------------------------------------------

@pytest.mark.parametrize("task_id", ["lab10.1", "lab10.2", "lab10.3"])
def test_stubs_are_not_yet_implemented(task_id):
    class StubGate(zoo.Gate):
        def forward(self, x):
            raise NotImplementedError("replace this line with your code")
    answer = StubGate if task_id == "lab10.2" else _stub
    assert check(task_id, answer).status == "not_implemented"


@pytest.mark.parametrize("task_id", ["lab10.1", "lab10.2", "lab10.3"])
def test_hint_ladders_have_steps_and_no_code(task_id):
    first, second = hint(task_id, 1), hint(task_id, 2)
    for h in (first, second):
        text = h.to_text()
        assert "dynamic_shapes={" not in text and "torch.cond(" not in text and "compile_str(" not in text
    assert "Lecture 10, section" in second.to_text()


# -- one language at a time ----------------------------------------------------------------------



class _WhereGate(zoo.Gate):
    def forward(self, x):
        y = self.linear(x)
        return torch.where(y.sum() > 0, torch.relu(y), -y)


@pytest.mark.parametrize("task_id, answer", [
    ("lab10.1", lambda model, x, y: torch.export.export(model, (x, y))),
    ("lab10.2", _WhereGate),
    ("lab10.3", _compile(convert=False)),
], ids=["lab10.1", "lab10.2", "lab10.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)
