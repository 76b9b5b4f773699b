"""Lab 10 checkers: reference answers pass, stubs are "not yet implemented", and the usual
mistakes are rejected with a message naming them (in both languages)."""
from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
import torch
from torch.export import Dim

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint, lowering


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def _names(model):
    return list(inspect.signature(model.forward).parameters)


# -- lab10.1 ---------------------------------------------------------------------------------

def _shared(first, second=None, *, keys=None):
    """An answer exporting with ``first`` for the 3-D input's dims and ``second`` (default: the
    same) for the 2-D input's, by position or keyed by ``keys`` (a list of two names)."""
    def export_shared_sizes(model, a, b):
        shapes = (first(), (second or first)()) if second else (lambda s: (s, {k: v for k, v in s.items() if k < 2}))(first())
        if keys is not None:
            shapes = dict(zip(keys(model) if callable(keys) else keys, shapes))
        return torch.export.export(model, (a, b), dynamic_shapes=shapes)
    return export_shared_sizes


def _pair(batch, length):
    return lambda: {0: batch, 1: length}


_B, _T = Dim("batch"), Dim("length")


def test_shared_sizes_reference_passes():
    expect_passed("lab10.1", solution("lab10", "export_shared_sizes"))


def test_shared_sizes_with_dim_auto_passes_too():
    expect_passed("lab10.1", _shared(lambda: {0: Dim.AUTO, 1: Dim.AUTO, 2: Dim.AUTO}))


def test_shared_sizes_keyed_by_the_models_own_names_passes_too():
    def by_name(model, a, b):
        n, m = Dim("n"), Dim("t", min=1)
        first, second = inspect.signature(model.forward).parameters
        return torch.export.export(model, args=(a, b), strict=True,
                                   dynamic_shapes={first: {0: n, 1: m}, second: [n, m]})
    expect_passed("lab10.1", by_name)


def test_shared_sizes_with_a_shapes_collection_and_same_named_dims_passes_too():
    def collected(model, a, b):
        shapes = torch.export.ShapesCollection()
        shapes[a] = {0: Dim("n"), 1: Dim("t")}
        shapes[b] = {0: Dim("n"), 1: Dim("t")}  # other objects, the same names: the same sizes
        return torch.export.export(model, (a, b), dynamic_shapes=shapes)
    expect_passed("lab10.1", collected)


def test_shared_sizes_static_export_is_named():
    result = expect_wrong("lab10.1", lambda model, a, b: torch.export.export(model, (a, b)))
    assert "the batch was specialised" in result.en and "批维度被特化" in result.zh


def test_shared_sizes_batch_only_is_named():
    result = expect_wrong("lab10.1", _shared(lambda: {0: _B}))
    assert "the length was specialised" in result.en and "长度被特化" in result.zh


def test_shared_sizes_keyed_x_y_is_named():
    result = expect_wrong("lab10.1", _shared(_pair(_B, _T), keys=["x", "y"]))
    assert "keyed by names this model's forward does not use" in result.en and "参数名" in result.zh


def test_shared_sizes_two_batch_dims_is_named():
    result = expect_wrong("lab10.1", _shared(_pair(Dim("b1"), _T), _pair(Dim("b2"), _T)))
    assert "a Dim each" in result.en and "Suggested fixes" in result.en and "各用了一个 Dim" in result.zh


def test_shared_sizes_one_dim_for_batch_and_length_is_named():
    result = expect_wrong("lab10.1", _shared(_pair(_B, _B)))
    assert "one Dim for two dimensions" in result.en and "同一个 Dim" in result.zh


def test_shared_sizes_second_input_dims_swapped_are_named():
    result = expect_wrong("lab10.1", _shared(_pair(_B, _T), _pair(_T, _B)))
    assert "Dims of one input are in the wrong order" in result.en and "batch, then length" in result.en
    assert "有一个输入的 Dim 顺序错了" in result.zh and "先批维度，后长度" in result.zh
    result = expect_wrong("lab10.1", _shared(_pair(_T, _B), _pair(_B, _T)))  # the first input's Dims swapped
    assert "Dims of one input are in the wrong order" in result.en and "有一个输入的 Dim 顺序错了" in result.zh


def test_shared_sizes_exported_with_keyword_inputs_passes_too():
    def by_keyword(model, a, b):
        first, second = _names(model)
        batch, length = Dim("batch"), Dim("length")
        return torch.export.export(model, (), kwargs={first: a, second: b},
                                   dynamic_shapes={first: {0: batch, 1: length}, second: {0: batch, 1: length}})

    def mixed(model, a, b):
        batch, length = Dim("batch"), Dim("length")
        return torch.export.export(model, (a,), kwargs={_names(model)[1]: b},
                                   dynamic_shapes=({0: batch, 1: length}, {0: batch, 1: length}))
    for answer in (by_keyword, mixed):
        expect_passed("lab10.1", answer)


def test_shared_sizes_feature_dim_marked_dynamic_is_named():
    result = expect_wrong("lab10.1", _shared(lambda: {0: _B, 1: _T, 2: Dim("f")}))
    assert "fixed by the model" in result.en and "被模型固定" in result.zh


def test_shared_sizes_length_dynamic_in_one_input_only_is_named():
    result = expect_wrong("lab10.1", _shared(_pair(_B, None), _pair(_B, _T)))
    assert "fixed by the model" in result.en and "另一个输入" in result.zh


@pytest.mark.parametrize("bounded", ["batch", "length"])
def test_shared_sizes_range_too_small_is_named(bounded):
    small = Dim("small", max=1024)
    result = expect_wrong("lab10.1", _shared(_pair(small, _T) if bounded == "batch" else _pair(_B, small)))
    assert f"the {bounded} is dynamic, but the range you gave it (0..1024) excludes" in result.en
    assert "排除了模型必须支持的大小" in result.zh


def test_shared_sizes_range_above_one_is_named():
    result = expect_wrong("lab10.1", _shared(_pair(_B, Dim("len", min=2, max=64))))
    assert "(2..64) excludes" in result.en and "（2..64）" in result.zh


def test_shared_sizes_range_starting_above_the_smallest_size_is_named():
    result = expect_wrong("lab10.1", _shared(_pair(Dim("b", min=3), _T)))
    assert "(3..∞) excludes" in result.en and "(here 2)" in result.en and "（3..∞）" in result.zh


@pytest.mark.parametrize("limit", [10_000, 2 ** 20])
def test_shared_sizes_upper_limit_of_any_size_is_named(limit):
    bounded = Dim("batch", max=limit), Dim("length", max=limit)
    result = expect_wrong("lab10.1", _shared(_pair(*bounded)))
    assert f"(0..{limit}) has an upper limit" in result.en and "a max of any size is wrong" in result.en
    assert "有上限" in result.zh and "无论 max 取多大都不对" in result.zh


def test_shared_sizes_with_dim_dynamic_and_min_two_pass_too():
    expect_passed("lab10.1", _shared(lambda: {0: Dim.DYNAMIC, 1: Dim.DYNAMIC}))
    expect_passed("lab10.1", _shared(_pair(Dim("b", min=2), Dim("t", min=2))))  # 1 still runs: see the task text


def test_shared_sizes_copy_strict_and_decompositions_pass_too():
    def decomposed(model, a, b):
        batch, length = Dim("batch", min=1), Dim("length")
        return torch.export.export(copy.deepcopy(model), (a.clone(), b.clone()), strict=True,
                                   dynamic_shapes=[{0: batch, 1: length}, (batch, length)]).run_decompositions()
    expect_passed("lab10.1", decomposed)


def test_shared_sizes_switching_to_train_mode_is_named():
    def train(model, a, b):
        model.train()
        return _shared(_pair(_B, _T))(model, a, b)
    result = expect_wrong("lab10.1", train)
    assert "between train and eval mode" in result.en and "训练/评估模式" in result.zh


def test_shared_sizes_example_made_to_require_grad_is_named():
    def grad(model, a, b):
        a.requires_grad_(True)
        return _shared(_pair(_B, _T))(model, a.detach(), b)
    result = expect_wrong("lab10.1", grad)
    assert "changed the example inputs" in result.en and "requires_grad" in result.en and "示例输入" in result.zh


def test_shared_sizes_returning_the_module_is_named():
    def module(model, a, b):
        return _shared(_pair(_B, _T))(model, a, b).module()
    result = expect_wrong("lab10.1", module)
    assert "ExportedProgram itself" in result.en and "ExportedProgram 本身" in result.zh


def test_shared_sizes_changing_the_model_is_named():
    def halve(model, a, b):
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(0.5)
        return _shared(_pair(_B, _T))(model, a, b)
    result = expect_wrong("lab10.1", halve)
    assert "changed the model" in result.en and "改动了传入的模型" in result.zh


# -- lab10.2 ---------------------------------------------------------------------------------

def _skip_gate():
    return solution("lab10", "SkipGate")


def _gate(forward):
    return type("Answer", (_skip_gate(),), {"forward": forward})


def test_cond_gate_reference_passes():
    expect_passed("lab10.2", solution("lab10", "ExportableSkipGate"))


def test_cond_gate_with_named_branches_passes_too():
    def with_skip(x, y):
        return y.clamp(min=0) + x

    def minus(x, y):
        return x.sub(y)

    def forward(self, inp):
        y = self.linear(inp)
        return torch.cond(torch.sum(y).gt(0), with_skip, minus, [inp, y])
    expect_passed("lab10.2", _gate(forward))


def test_cond_gate_with_x_added_after_cond_passes_too():
    def forward(self, x):
        y = self.linear(x)
        return x + torch.cond(y.sum() > 0, torch.relu, torch.neg, (y,))
    expect_passed("lab10.2", _gate(forward))


def test_cond_gate_closing_over_x_passes_too():
    def forward(self, x):
        return torch.cond(self.linear(x).sum() > 0.0, lambda x: torch.relu(self.linear(x)) + x,
                          lambda x: x - self.linear(x), (x,))
    expect_passed("lab10.2", _gate(forward))


def test_cond_gate_python_if_is_named():
    result = expect_wrong("lab10.2", _skip_gate())
    assert "data-dependent" in result.en and "数据相关" in result.zh


def test_cond_gate_swapped_branches_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda x, y: x - y, lambda x, y: torch.relu(y) + x, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "swapped" in result.en and "弄反" in result.zh


def test_cond_gate_swapped_with_ge_is_still_named_swapped():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() >= 0, lambda x, y: x - y, lambda x, y: torch.relu(y) + x, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "swapped" in result.en and "弄反" in result.zh


def test_cond_gate_ge_at_the_boundary_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() >= 0, lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "exactly 0" in result.en and "strict" in result.en and "恰好为 0" in result.zh
    assert "swapped" not in result.en


@pytest.mark.parametrize("eps", [1e-6, 1e-12, 1e-20])
def test_cond_gate_tolerance_in_the_condition_is_named(eps):
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > eps, lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "tiny" in result.en and "no tolerance" in result.en and "没有容差" in result.zh


@pytest.mark.parametrize("condition", [lambda y: y.double().mean() > 0, lambda y: y.double().sum() > 0,
                                       lambda y: y.sum(dim=1).sum() > 0],
                         ids=["float64 mean", "float64 sum", "rows first"])
def test_cond_gate_condition_rounded_otherwise_is_named(condition):
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(condition(y), lambda a, b: torch.relu(b) + a, lambda a, b: a - b, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "a float32 sum, is exactly 0 (rounding)" in result.en and "not in float64" in result.en
    assert "因舍入恰好为 0" in result.zh and "float64" in result.zh


@pytest.mark.parametrize("condition", [lambda y: y.mean() > 0, lambda y: torch.relu(y.sum()) > 0],
                         ids=["float32 mean", "relu in the condition"])
def test_cond_gate_with_an_equivalent_condition_passes_too(condition):
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(condition(y), lambda a, b: torch.relu(b) + a, lambda a, b: a - b, (x, y))
    expect_passed("lab10.2", _gate(forward))


def test_cond_gate_negated_condition_is_named_on_nan():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(~(y.sum() <= 0), lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "is NaN" in result.en and "not (y.sum() <= 0)" in result.en and "为 NaN" in result.zh


def test_cond_gate_nansum_condition_is_named_on_nan():
    # round 4: nansum skips the NaN, so the condition is true where SkipGate's y.sum() > 0 is false
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.nansum() > 0, lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "is NaN" in result.en and "nansum" in result.en and "nansum" in result.zh


def test_cond_gate_squeezing_the_batch_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda x, y: (torch.relu(y) + x).squeeze(0), lambda x, y: (x - y).squeeze(0),
                          (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "another shape than SkipGate's" in result.en and "a batch of one row" in result.en
    assert "形状与 SkipGate 的不同" in result.zh


def test_cond_gate_wrong_only_in_eager_mode_is_named():
    def forward(self, x):
        y = self.linear(x)
        if torch.compiler.is_exporting() or torch.compiler.is_compiling():
            return torch.cond(y.sum() > 0, lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
        return torch.relu(y) + x if y.sum() >= 0 else x - y
    result = expect_wrong("lab10.2", _gate(forward))
    assert "called directly (in eager mode" in result.en and "eager 模式" in result.zh


def test_cond_gate_changing_the_input_in_eager_mode_is_named():
    def forward(self, x):
        y = self.linear(x)
        if not torch.compiler.is_exporting():
            x.nan_to_num_(0.0)
        return torch.cond(y.sum() > 0, lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "changed its input in place" in result.en and "原地修改了输入" in result.zh


def test_cond_gate_closures_and_an_eager_fallback_pass_too():
    def closures(self, x):
        y = self.linear(x)
        return torch.cond(y.sum().gt(0), lambda: torch.nn.functional.relu(y) + x, lambda: torch.sub(x, y), ())

    def fallback(self, x):
        if not torch.compiler.is_exporting():
            return super(type(self), self).forward(x)
        y = self.linear(x)
        return torch.cond(torch.gt(y.sum(), 0.0), lambda x, y: y.clamp_min(0).add(x), lambda x, y: x.sub(y), (x, y))
    expect_passed("lab10.2", _gate(closures))
    expect_passed("lab10.2", _gate(fallback))


def test_cond_gate_branch_on_x_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(x.sum() > 0, lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "the condition is wrong" in result.en and "条件写错了" in result.zh and "swapped" not in result.en


def test_cond_gate_any_positive_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond((y > 0).any(), lambda x, y: torch.relu(y) + x, lambda x, y: x - y, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "the condition is wrong" in result.en and "条件写错了" in result.zh


def test_cond_gate_lecture_branches_without_skip_is_wrong():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda y: torch.relu(y), lambda y: -y, (y,))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "differs from SkipGate" in result.en and "SkipGate 的结果不同" in result.zh


def test_cond_gate_torch_where_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.where(y.sum() > 0, torch.relu(y) + x, x - y)
    result = expect_wrong("lab10.2", _gate(forward))
    assert "no cond node" in result.en and "没有 cond 节点" in result.zh


def test_cond_gate_results_computed_before_cond_is_named():
    def forward(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda a, b: a.clone(), lambda a, b: b.clone(), (torch.relu(y) + x, x - y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "done before torch.cond" in result.en and "之前就做了" in result.zh


def test_cond_gate_relu_computed_before_cond_is_named():
    def forward(self, x):
        y = self.linear(x)
        r = torch.relu(y)
        return torch.cond(y.sum() > 0, lambda r, x, y: r + x, lambda r, x, y: x - y, (r, x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "done before torch.cond" in result.en and "之前就做了" in result.zh


@pytest.mark.parametrize("positive", [
    lambda y: torch.maximum(y, torch.zeros_like(y)),
    lambda y: torch.where(y > 0, y, 0.0),
    lambda y: y * (y > 0),
], ids=["maximum", "where", "mask"])
def test_cond_gate_relu_written_otherwise_before_cond_is_named(positive):
    def forward(self, x):
        y = self.linear(x)
        pos = positive(y)
        return torch.cond(y.sum() > 0, lambda x, y, pos: pos + x, lambda x, y, pos: x - y, (x, y, pos))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "done before torch.cond" in result.en and "之前就做了" in result.zh


@pytest.mark.parametrize("difference", [lambda x, y: x - y, lambda x, y: y - x, lambda x, y: 2 * (x - y)],
                         ids=["x-y", "y-x", "twice"])
def test_cond_gate_difference_computed_before_cond_is_named(difference):
    scale = float(difference(torch.ones(()), torch.zeros(())))  # n / scale is x - y again

    def forward(self, x):
        y = self.linear(x)
        n = difference(x, y)
        return torch.cond(y.sum() > 0, lambda x, y, n: torch.relu(y) + x, lambda x, y, n: n / scale, (x, y, n))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "done before torch.cond" in result.en and "之前就做了" in result.zh


def test_cond_gate_both_results_in_each_branch_are_named():
    def forward(self, x):
        y = self.linear(x)
        both = lambda x, y: torch.where(y.sum() > 0, torch.relu(y) + x, x - y)  # noqa: E731
        return torch.cond(y.sum() > 0, both, both, (x, y))
    result = expect_wrong("lab10.2", _gate(forward))
    assert "each branch computes both results" in result.en and "每个分支都把两个结果都算了" in result.zh


def test_cond_gate_operands_derived_without_branch_work_pass_too():
    def negated(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda x, y, n: torch.relu(y) + x, lambda x, y, n: x + n, (x, y, -y))

    def extra(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda x, y, w, x2: torch.relu(y) + x2, lambda x, y, w, x2: x - y,
                          (x, y, self.linear.weight, x * 1))

    def one_tuple(self, x):
        y = self.linear(x)
        return torch.cond(y.sum() > 0, lambda x, y: (y.clamp(min=0) + x,), lambda x, y: (torch.add(x, y, alpha=-1),),
                          (x, y))[0]
    for forward in (negated, extra, one_tuple):
        expect_passed("lab10.2", _gate(forward))


# -- lab10.3 ---------------------------------------------------------------------------------

def _compile(stage="linalg-on-tensors", dynamic=True, convert=True, eager=False, keyed_x=False, detach=True,
             by_name=False):
    import iree.compiler as ireec
    import iree.runtime as ireert

    def compile_with_iree(model, example):
        spec = {0: Dim("batch")}
        shapes = None
        if dynamic:
            shapes = {"x": spec} if keyed_x else {_names(model)[0]: spec} if by_name else (spec,)
        low = lowering(model, example, dynamic_shapes=shapes, stages=(stage,))
        vmfb = ireec.compile_str(low.stage(stage).text, target_backends=["llvm-cpu"],
                                 extra_args=["--iree-llvmcpu-target-cpu=host"])
        module = ireert.load_vm_flatbuffer(vmfb, driver="local-task")

        def run(x):
            if eager:
                return model(x)
            out = np.asarray(module.main((x.detach() if detach else x).numpy()).to_host())
            return torch.from_numpy(out) if convert else out
        return run
    return compile_with_iree


def test_iree_reference_passes():
    expect_passed("lab10.3", solution("lab10", "compile_with_iree"))


def test_iree_through_the_torch_dialect_keyed_by_name_passes_too():
    expect_passed("lab10.3", _compile(stage="torch", by_name=True))


def test_iree_static_batch_is_named():
    result = expect_wrong("lab10.3", _compile(dynamic=False))
    assert "static batch" in result.en and "批维度是静态的" in result.zh


def test_iree_keyed_by_x_is_named():
    result = expect_wrong("lab10.3", _compile(keyed_x=True))
    assert "keyed by names this model's forward does not use" in result.en and "参数名" in result.zh


def test_iree_numpy_result_is_named():
    result = expect_wrong("lab10.3", _compile(convert=False))
    assert "return a torch.Tensor" in result.en and "请返回 torch.Tensor" in result.zh


def test_iree_no_detach_is_named():
    result = expect_wrong("lab10.3", _compile(detach=False))
    assert "requires grad" in result.en and "要求梯度" in result.zh


def test_iree_calling_the_model_is_named():
    result = expect_wrong("lab10.3", _compile(eager=True))
    assert "computes with PyTorch" in result.en and "用 PyTorch 做了计算" in result.zh


def test_iree_calling_a_frozen_copy_of_the_model_is_named():
    def frozen_copy(model, example):
        frozen = copy.deepcopy(model)
        _compile()(model, example)

        def run(x):
            with torch.no_grad():
                return frozen(x)
        return run
    result = expect_wrong("lab10.3", frozen_copy)
    assert "computes with PyTorch" in result.en and "用 PyTorch 做了计算" in result.zh


def test_iree_calling_the_exported_program_is_named():
    def exported(model, example):
        program = torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
        return lambda x: program.module()(x).detach()
    result = expect_wrong("lab10.3", exported)
    assert "computes with PyTorch" in result.en


def test_iree_compiling_again_for_each_batch_is_named():
    def per_batch(model, example):
        frozen = copy.deepcopy(model)
        compiled = {}

        def run(x):
            if x.shape[0] not in compiled:
                compiled[x.shape[0]] = _compile(dynamic=False)(frozen, x.detach())
            return compiled[x.shape[0]](x)
        return run
    result = expect_wrong("lab10.3", per_batch)
    assert "exports (and compiles) the model again" in result.en and "又导出" in result.zh


def _loaded(model, example, dynamic_shapes=({0: Dim("batch")},), backend="llvm-cpu"):
    import iree.compiler as ireec
    import iree.runtime as ireert
    low = lowering(model, example, dynamic_shapes=dynamic_shapes, stages=("linalg-on-tensors",))
    extra = ["--iree-llvmcpu-target-cpu=host"] if backend == "llvm-cpu" else []
    vmfb = ireec.compile_str(low.stage("linalg-on-tensors").text, target_backends=[backend], extra_args=extra)
    return ireert.load_vm_flatbuffer(vmfb, driver="local-task")


def _out(module, x):
    return torch.from_numpy(np.asarray(module.main(x.detach().numpy()).to_host()))


def test_iree_results_kept_by_shape_are_named():
    def memo(model, example):
        module, kept = _loaded(model, example), {}
        return lambda x: kept.setdefault(tuple(x.shape), _out(module, x))
    result = expect_wrong("lab10.3", memo)
    assert "the result of an earlier call" in result.en and "of the same shape" in result.en
    assert "之前某次调用的结果" in result.zh


def test_iree_results_kept_by_tensor_are_named():
    def memo(model, example):
        module, kept = _loaded(model, example), {}

        def run(x):
            key = (x.data_ptr(), tuple(x.shape))
            if key not in kept:
                kept[key] = _out(module, x)
            return kept[key]
        return run
    result = expect_wrong("lab10.3", memo)
    assert "the same tensor changed in place" in result.en and "原地修改" in result.zh


def test_iree_one_output_tensor_per_shape_is_named():
    def shared(model, example):
        module, buffers = _loaded(model, example), {}

        def run(x):
            out = _out(module, x)
            return buffers.setdefault(tuple(out.shape), torch.empty(out.shape)).copy_(out)
        return run
    result = expect_wrong("lab10.3", shared)
    assert "changed when run was called again" in result.en and "同一个张量" in result.zh


def test_iree_pytorch_in_a_worker_thread_is_named():
    import concurrent.futures

    def threaded(model, example):
        frozen, pool = copy.deepcopy(model), concurrent.futures.ThreadPoolExecutor(1)
        _loaded(model, example)

        def run(x):
            with torch.no_grad():
                return pool.submit(lambda: frozen(x.detach())).result()
        return run
    result = expect_wrong("lab10.3", threaded)
    assert "without calling the compiled IREE module" in result.en and "没有调用 IREE 编译出的模块" in result.zh


def test_iree_vmvx_backend_is_named():
    def vmvx(model, example):
        module = _loaded(model, example, backend="vmvx")
        return lambda x: _out(module, x)
    result = expect_wrong("lab10.3", vmvx)
    assert "vmvx" in result.en and "llvm-cpu" in result.en and "vmvx 后端" in result.zh


def test_iree_vmvx_module_loaded_in_run_is_named():
    import iree.compiler as ireec
    import iree.runtime as ireert

    def lazy(model, example):
        low = lowering(model, example, dynamic_shapes=({0: Dim("batch")},), stages=("linalg-on-tensors",))
        vmfb, kept = ireec.compile_str(low.stage("linalg-on-tensors").text, target_backends=["vmvx"]), {}

        def run(x):
            if "module" not in kept:
                kept["module"] = ireert.load_vm_flatbuffer(vmfb, driver="local-task")
            return _out(kept["module"], x)
        return run
    result = expect_wrong("lab10.3", lazy)
    assert "the module your run loads" in result.en and "vmvx" in result.en and "run 加载的模块" in result.zh


def test_iree_compiling_in_run_is_named():
    import iree.compiler as ireec
    import iree.runtime as ireert

    def each_call(model, example):
        text = lowering(model, example, dynamic_shapes=({0: Dim("batch")},),
                        stages=("linalg-on-tensors",)).stage("linalg-on-tensors").text

        def run(x):
            vmfb = ireec.compile_str(text, target_backends=["llvm-cpu"])
            return _out(ireert.load_vm_flatbuffer(vmfb, driver="local-task"), x)
        return run
    result = expect_wrong("lab10.3", each_call)
    assert "compiles the MLIR with IREE again" in result.en and "又用 IREE 编译了一次" in result.zh


def test_iree_llvm_cpu_module_loaded_lazily_in_run_passes_too():
    import iree.compiler as ireec
    import iree.runtime as ireert

    def lazy(model, example):
        low = lowering(model, example, dynamic_shapes=({0: Dim("batch")},), stages=("linalg-on-tensors",))
        vmfb, kept = ireec.compile_str(low.stage("linalg-on-tensors").text, target_backends=["llvm-cpu"]), {}

        def run(x):
            if "module" not in kept:
                kept["module"] = ireert.load_vm_flatbuffer(vmfb, driver="local-task")
            return _out(kept["module"], x)
        return run
    expect_passed("lab10.3", lazy)


def test_iree_example_made_to_require_grad_is_named():
    def grad(model, example):
        example.requires_grad_(True)
        module = _loaded(model, example.detach())
        return lambda x: _out(module, x)
    result = expect_wrong("lab10.3", grad)
    assert "changed the example" in result.en and "requires_grad" in result.en and "改动了传入的示例" in result.zh


def test_iree_run_changing_its_input_is_named():
    def no_grad_in_place(model, example):
        module = _loaded(model, example)

        def run(x):
            if x.requires_grad:
                x.requires_grad_(False)
            return _out(module, x)
        return run
    result = expect_wrong("lab10.3", no_grad_in_place)
    assert "run changed the tensor it was given" in result.en and "run 改动了传入的张量" in result.zh


def test_iree_switching_to_train_mode_is_named():
    def train(model, example):
        model.train()
        module = _loaded(model, example)
        return lambda x: _out(module, x)
    result = expect_wrong("lab10.3", train)
    assert "between train and eval mode" in result.en and "训练/评估模式" in result.zh


def test_iree_other_right_answers_pass_too():
    import iree.compiler as ireec
    import iree.runtime as ireert

    def padded(model, example):  # a static batch of 4: pad and run in chunks
        module, size = _loaded(model, example, dynamic_shapes=None), example.shape[0]

        def run(x):
            x = x.detach().contiguous()
            n = x.shape[0]
            padded = torch.cat([x, x.new_zeros((-n) % size, *x.shape[1:])])
            return torch.cat([_out(module, chunk) for chunk in padded.split(size)])[:n]
        return run

    def system_context(model, example):
        low = lowering(model, example, dynamic_shapes=[[Dim.AUTO, None]], stages=("linalg-on-tensors",))
        vmfb = ireec.compile_str(low.stage("linalg-on-tensors").text, target_backends=["llvm-cpu"])
        context = ireert.SystemContext(config=ireert.Config("local-sync"))
        context.add_vm_module(ireert.VmModule.copy_buffer(context.instance, vmfb))
        main = context.modules.module["main"]
        return lambda x: torch.as_tensor(main(x.detach().numpy()).to_host()).clone()

    def limited(model, example):  # the runtime does not enforce export's max: batch 1000 still runs
        module = _loaded(model, example, dynamic_shapes=({0: Dim("batch", max=1000)},))
        return lambda x: _out(module, x)
    for answer in (padded, system_context, limited):
        expect_passed("lab10.3", answer)


def test_iree_dynamic_stablehlo_is_named():
    result = expect_wrong("lab10.3", _compile(stage="stablehlo"))
    assert "dynamic_broadcast_in_dim" in result.en and "StableHLO" in result.zh


def test_iree_tosa_is_named():
    result = expect_wrong("lab10.3", _compile(stage="tosa"))
    assert "TOSA" in result.en and "TOSA" in result.zh


# -- every task ------------------------------------------------------------------------------

@pytest.mark.parametrize("task_id", ["lab10.1", "lab10.2", "lab10.3"])
def test_stubs_are_not_yet_implemented(task_id):
    def forward(self, x):
        raise NotImplementedError("replace this line with your code")
    answer = _gate(forward) if task_id == "lab10.2" else _stub
    assert check(task_id, answer).status == "not_implemented"


@pytest.mark.parametrize("task_id", ["lab10.1", "lab10.2", "lab10.3"])
def test_hint_ladders_have_steps_and_no_code(task_id):
    first, second = hint(task_id, 1), hint(task_id, 2)
    for h in (first, second):
        text = h.to_text()
        assert "dynamic_shapes={" not in text and "torch.cond(" not in text and "compile_str(" not in text
    assert "Lecture 10, section" in second.to_text()


# -- one language at a time ----------------------------------------------------------------------

def _where_forward(self, x):
    y = self.linear(x)
    return torch.where(y.sum() > 0, torch.relu(y) + x, x - y)


@pytest.mark.parametrize("task_id, answer", [
    ("lab10.1", lambda model, a, b: torch.export.export(model, (a, b))),
    ("lab10.2", lambda: _gate(_where_forward)),
    ("lab10.3", _compile(convert=False)),
], ids=["lab10.1", "lab10.2", "lab10.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    if task_id == "lab10.2":
        answer = answer()
    expect_one_language(task_id, answer, monkeypatch)
