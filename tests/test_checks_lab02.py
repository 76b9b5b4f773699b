"""Checkers of lab02 (TorchScript IR): the references from solutions/ pass, other right forms
pass, stubs are not implemented, and the mistakes learners make are rejected and named in both
languages."""
from __future__ import annotations

import itertools
from collections import Counter
from typing import Optional

import pytest
import torch

from fxcourse import check, hint
from fxcourse._lang import text as shown
from fxcourse.checks import lab02, task_ids
from fxcourse.zoo import MaskedPool

from checking import expect_one_language, expect_passed, expect_wrong, solution

C = torch._C
TASKS = {"lab02.1": "count_kinds", "lab02.2": "make_fixed_pool", "lab02.3": "run_passes"}


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def count_kinds(graph):
    return solution("lab02", "count_kinds")(graph)


def run_passes(graph):
    return solution("lab02", "run_passes")(graph)


def _pool(forward):
    """A subclass of MaskedPool with ``forward`` as its forward, as make_fixed_pool returns it."""
    return lambda: type("Pool", (MaskedPool,), {"forward": forward})


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_reference_answer_from_the_solutions_passes(task_id):
    expect_passed(task_id, solution("lab02", TASKS[task_id]))


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_stubs_are_not_implemented(task_id):
    assert check(task_id, _stub).status == "not_implemented"


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_hints_go_from_a_nudge_to_the_lecture_without_code(task_id):
    count = hint(task_id, 1).count
    assert 2 <= count <= 3
    last = hint(task_id, count)
    assert "course/02_torchscript_script_ir.ipynb" in last.en and "course/02_torchscript_script_ir.ipynb" in last.zh
    for level in range(1, count + 1):
        step = hint(task_id, level)
        assert "Optional[torch.Tensor]" not in step.en and "_jit_pass_" not in step.en and "def " not in step.en


def test_lab02_2_the_fixed_class_itself_is_accepted_too():
    expect_passed("lab02.2", solution("lab02", "make_fixed_pool")())


def test_lab02_2_a_plain_nn_module_with_the_same_forward_passes():
    class Standalone(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(6, 6)

        def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    scale: Optional[float] = None) -> torch.Tensor:
            h = self.proj(x)
            if mask is not None:
                h = torch.where(mask, h, torch.zeros_like(h))
            return h.sum(-1) * (scale if scale is not None else 1.0 / h.shape[-1])

    expect_passed("lab02.2", lambda: Standalone)


def test_maskedpool_is_importable_from_the_zoo():
    from fxcourse import zoo

    assert zoo.MaskedPool is MaskedPool and "MaskedPool" in zoo.__all__
    assert not hasattr(lab02, "MaskedPool")  # not hidden in the checker


# --------------------------------------------------------------------------- lab02.1


def test_lab02_1_a_counter_and_a_stack_pass_too():
    def with_stack(graph):
        counts, todo = Counter(), [graph]
        while todo:
            block = todo.pop()
            for node in block.nodes():
                counts[node.kind()] += 1
                todo.extend(node.blocks())
        return counts

    expect_passed("lab02.1", with_stack)


def test_lab02_1_top_level_only_is_told_to_recurse_into_blocks():
    result = expect_wrong("lab02.1", lambda g: dict(Counter(n.kind() for n in g.nodes())))
    assert "top-level block" in result.en and "顶层 block" in result.zh
    assert "'prim::If'" in result.got or "prim::If" in result.got or result.got


def test_lab02_1_one_level_down_is_told_to_recurse_not_loop_twice():
    def one_level(graph):
        counts = Counter(n.kind() for n in graph.nodes())
        for node in graph.nodes():
            for sub in node.blocks():
                counts.update(inner.kind() for inner in sub.nodes())
        return dict(counts)

    result = expect_wrong("lab02.1", one_level)
    assert "recurse" in result.en and "递归" in result.zh


def test_lab02_1_counting_param_and_return_nodes_is_named():
    def with_param_return(graph):
        counts = Counter(count_kinds(graph))
        counts.update(["prim::Param", "prim::Return"])
        return dict(counts)

    result = expect_wrong("lab02.1", with_param_return)
    assert "prim::Param" in result.en and "prim::Param" in result.zh


def test_lab02_1_each_kind_once_is_named():
    result = expect_wrong("lab02.1", lambda g: dict.fromkeys(count_kinds(g), 1))
    assert "every count is 1" in result.en and "每个计数都是 1" in result.zh


# --------------------------------------------------------------------------- lab02.2


def test_lab02_2_the_broken_model_still_refuses_to_script():
    result = expect_wrong("lab02.2", lambda: MaskedPool)
    assert "**kwargs" in result.en and "**kwargs" in result.zh
    assert result.got.startswith("NotSupportedError")


def test_lab02_2_dropping_kwargs_only_is_named_as_the_untyped_mask():
    def forward(self, x, mask=None, scale=None):
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "typed mask as Tensor" in result.en and "mask 的类型定为 Tensor" in result.zh
    assert "mask: Tensor" in shown(result.got)
    assert "Optional[torch.Tensor]" not in result.en  # no code to paste
    text = result.to_text()
    assert "/__w/" not in text and ".cpp" not in text  # C++ source paths are cleaned away


def test_lab02_2_annotating_only_mask_is_named_as_the_untyped_scale():
    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, scale=None) -> torch.Tensor:
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "typed scale as Tensor" in result.en and "scale 的类型定为 Tensor" in result.zh
    assert "mask" not in result.en.split("typed")[1].split(",")[0]  # the message is about scale, not mask


def test_lab02_2_scale_as_an_optional_tensor_is_named():
    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None,
                scale: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        if scale is None:
            return h.sum(-1) / h.shape[-1]
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "scale is a Python float" in result.en and "Python float" in result.zh
    assert "Optional[Tensor]" in result.en


def test_lab02_2_a_float_default_of_none_is_named():
    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, scale: float = None) -> torch.Tensor:
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "default" in result.en and "默认值" in result.zh


def test_lab02_2_changing_the_default_scale_is_named():
    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, scale: float = 1.0) -> torch.Tensor:
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "default scale" in result.en and "默认的 scale" in result.zh


def test_lab02_2_an_inverted_mask_is_named():
    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None,
                scale: Optional[float] = None) -> torch.Tensor:
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(mask, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "other way round" in result.en and "mask 用反了" in result.zh


def test_lab02_2_renaming_an_argument_is_named():
    def forward(self, x: torch.Tensor, m: Optional[torch.Tensor] = None,
                scale: Optional[float] = None) -> torch.Tensor:
        h = self.proj(x)
        if m is not None:
            h = h.masked_fill(~m, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale

    result = expect_wrong("lab02.2", _pool(forward))
    assert "keep x, mask and scale" in result.en and "x、mask、scale" in result.zh


def test_lab02_2_dropping_the_linear_layer_is_caught():
    class NoProj(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.sum(-1)

    result = expect_wrong("lab02.2", lambda: NoProj)
    assert "self.proj" in result.en and "self.proj" in result.zh


# --------------------------------------------------------------------------- lab02.3


def test_lab02_3_passes_in_another_order_on_a_copy_pass():
    def other_order(graph):
        g = graph.copy()
        C._jit_pass_dce(g)
        C._jit_pass_constant_propagation(g)
        C._jit_pass_cse(g)
        C._jit_pass_dce(g)
        return g

    expect_passed("lab02.3", other_order)


def test_lab02_3_returning_what_a_pass_returns_is_none():
    def returns_none(graph):
        C._jit_pass_cse(graph)
        C._jit_pass_constant_propagation(graph)
        return C._jit_pass_dce(graph)

    result = expect_wrong("lab02.3", returns_none)
    assert "return the graph" in result.en and "请返回计算图" in result.zh and result.got == "None"


def test_lab02_3_missing_constant_propagation_is_named():
    def no_constant_propagation(graph):
        C._jit_pass_cse(graph)
        C._jit_pass_dce(graph)
        return graph

    result = expect_wrong("lab02.3", no_constant_propagation)
    assert "_jit_pass_constant_propagation" in result.en and "_jit_pass_constant_propagation" in result.zh


def test_lab02_3_missing_cse_is_named():
    def no_cse(graph):
        C._jit_pass_constant_propagation(graph)
        C._jit_pass_dce(graph)
        return graph

    result = expect_wrong("lab02.3", no_cse)
    assert "_jit_pass_cse" in result.en and "_jit_pass_cse" in result.zh


def test_lab02_3_passes_on_a_copy_returning_the_original_is_named():
    def on_a_copy(graph):
        run_passes(graph.copy())
        return graph

    result = expect_wrong("lab02.3", on_a_copy)
    assert "unchanged" in result.en and "graph.copy()" in result.en and "没有任何变化" in result.zh


def test_lab02_3_deleting_a_side_effect_is_caught_by_running_the_graph():
    def aggressive(graph):
        C._jit_pass_cse(graph)
        C._jit_pass_constant_propagation(graph)
        C._jit_pass_dce_allow_deleting_nodes_with_side_effects(graph)
        return graph

    result = expect_wrong("lab02.3", aggressive)
    assert "side effect" in result.en and "aten::mul_" in result.zh and "副作用" in result.zh


def test_lab02_3_the_order_of_the_three_passes_does_not_matter_on_the_hidden_graphs():
    """The checker expects what one run of CSE, constant propagation and DCE leaves; any order
    of the three must leave the same number of nodes, or a learner's order could fail."""
    passes = [run for _, run in lab02._PASSES]
    for label, graph, _ in lab02._pass_cases():
        counts = set()
        for order in itertools.permutations(passes):
            g = graph.copy()
            for run in order:
                run(g)
            counts.add(lab02._count(g))
        assert len(counts) == 1, (label, counts)
        assert counts.pop() < lab02._count(graph), label


def _pool_with_scale(annotation_default):
    """A MaskedPool whose scale uses 0.0 as its 'not given' value instead of None."""
    class ZeroSentinelPool(MaskedPool):
        def forward(self, x, mask: Optional[torch.Tensor] = None, scale: float = 0.0):
            h = self.proj(x)
            if mask is not None:
                h = h.masked_fill(~mask, 0.0)
            if scale == 0.0:
                scale = 1.0 / h.shape[-1]
            return h.sum(-1) * scale
    return ZeroSentinelPool


def test_lab02_2_a_zero_sentinel_for_scale_is_caught_by_an_explicit_none():
    result = expect_wrong("lab02.2", lambda: _pool_with_scale(0.0))
    assert "typed scale as float" in result.en and "把 scale 的类型定为 float" in result.zh
    assert "None" in shown(result.tried)


def test_lab02_2_keyword_only_scale_is_not_called_kwargs():
    def make():
        class KeywordOnlyPool(MaskedPool):
            def forward(self, x, mask: Optional[torch.Tensor] = None, *, scale: Optional[float] = None):
                h = self.proj(x)
                if mask is not None:
                    h = h.masked_fill(~mask, 0.0)
                if scale is None:
                    scale = 1.0 / h.shape[-1]
                return h.sum(-1) * scale
        return KeywordOnlyPool

    result = expect_wrong("lab02.2", make)
    assert "keyword-only" in result.en and "仅限关键字参数" in result.zh and "**kwargs" not in result.en


def test_lab02_2_a_float64_result_is_named():
    def make():
        class DoublePool(MaskedPool):
            def forward(self, x, mask: Optional[torch.Tensor] = None, scale: Optional[float] = None):
                h = self.proj(x)
                if mask is not None:
                    h = h.masked_fill(~mask, 0.0)
                if scale is None:
                    scale = 1.0 / h.shape[-1]
                return (h.sum(-1) * scale).double()
        return DoublePool

    result = expect_wrong("lab02.2", make)
    assert "another dtype" in result.en and "dtype 与 MaskedPool 的不同" in result.zh


# -- one language at a time ----------------------------------------------------------------------
def _untyped_mask_forward(self, x, mask=None, scale=None):
    h = self.proj(x)
    if mask is not None:
        h = h.masked_fill(~mask, 0.0)
    if scale is None:
        scale = 1.0 / h.shape[-1]
    return h.sum(-1) * scale


def _returns_what_dce_returns(graph):
    C._jit_pass_cse(graph)
    C._jit_pass_constant_propagation(graph)
    return C._jit_pass_dce(graph)


ONE_WRONG_ANSWER = {
    "lab02.1": lambda g: dict(Counter(n.kind() for n in g.nodes())),
    "lab02.2": _pool(_untyped_mask_forward),
    "lab02.3": _returns_what_dce_returns,
}


def test_every_lab02_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab02.")]


@pytest.mark.parametrize("task_id", sorted(ONE_WRONG_ANSWER))
def test_lab02_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, ONE_WRONG_ANSWER[task_id], monkeypatch)


# -- issue 30: dead code in the probe graphs, and what a learner who ran too few passes is told ---------
def _count_every_node(graph):
    counts = Counter()

    def visit(block):
        for node in block.nodes():
            counts[node.kind()] += 1
            for sub in node.blocks():
                visit(sub)

    visit(graph)
    return dict(counts)


def test_lab02_1_dead_code_elimination_before_counting_is_named():
    def count_kinds(graph):
        torch._C._jit_pass_dce(graph)
        return _count_every_node(graph)

    result = expect_wrong("lab02.1", count_kinds)
    assert "unused nodes are missing" in result.en and "无人使用的节点" in result.zh
    assert "parse_ir" in result.tried[0]


def test_lab02_1_cleaning_a_copy_before_counting_is_named():
    def count_kinds(graph):
        clean = graph.copy()
        torch._C._jit_pass_cse(clean)
        torch._C._jit_pass_dce(clean)
        return _count_every_node(clean)

    result = expect_wrong("lab02.1", count_kinds)
    assert "used or not" in result.en and "无论是否被使用" in result.zh


def test_lab02_1_a_right_answer_with_an_explicit_stack_passes():
    def count_kinds(graph):
        counts, stack = Counter(), [graph]
        while stack:
            for node in stack.pop().nodes():
                counts[node.kind()] += 1
                stack.extend(node.blocks())
        return counts

    expect_passed("lab02.1", count_kinds)


def test_lab02_3_skipping_dead_code_elimination_is_named():
    def run_passes(graph):
        torch._C._jit_pass_cse(graph)
        torch._C._jit_pass_constant_propagation(graph)
        return graph

    result = expect_wrong("lab02.3", run_passes)
    assert "torch._C._jit_pass_dce" in result.en and "torch._C._jit_pass_dce" in result.zh
    assert "Apply all three passes" in result.en and "三个 pass 都用上" in result.zh
    assert "unused" in result.tried[0]


def test_lab02_3_only_dead_code_elimination_is_told_which_passes_are_missing():
    def run_passes(graph):
        torch._C._jit_pass_dce(graph)
        return graph

    result = expect_wrong("lab02.3", run_passes)
    assert "only torch._C._jit_pass_dce ran on it" in result.en
    assert "torch._C._jit_pass_cse" in result.en and "只在它上面运行了 torch._C._jit_pass_dce" in result.zh
    assert "graph.copy()" not in result.en


def test_lab02_3_passes_on_a_copy_still_get_the_copy_message():
    def run_passes(graph):
        copy = graph.copy()
        for run in (torch._C._jit_pass_cse, torch._C._jit_pass_constant_propagation, torch._C._jit_pass_dce):
            run(copy)
        return graph

    result = expect_wrong("lab02.3", run_passes)
    assert "passes ran on another graph" in result.en and "return that copy" in result.en
    assert "pass 却运行在另一张图上" in result.zh


def test_lab02_3_right_answers_in_another_order_pass():
    def dce_first(graph):
        for run in (torch._C._jit_pass_dce, torch._C._jit_pass_constant_propagation, torch._C._jit_pass_cse,
                    torch._C._jit_pass_dce):
            run(graph)
        return graph

    def cse_last_then_dce(graph):
        torch._C._jit_pass_constant_propagation(graph)
        torch._C._jit_pass_cse(graph)
        torch._C._jit_pass_dce(graph)
        return graph

    expect_passed("lab02.3", dce_first)
    expect_passed("lab02.3", cse_last_then_dce)



# -- second fix round (att-l00) ---------------------------------------------------------------------
def _counted_after(*passes):
    def count_kinds(graph):
        clean = graph.copy()
        for name in passes:
            getattr(torch._C, f"_jit_pass_{name}")(clean)
        return _count_every_node(clean)
    return count_kinds


@pytest.mark.parametrize("passes", [("cse",), ("constant_propagation",), ("constant_pooling",)])
def test_lab02_1_a_clean_up_pass_before_counting_is_named(passes):
    result = expect_wrong("lab02.1", _counted_after(*passes))
    assert "cleaned before counting" in result.en and "统计之前计算图被清理过" in result.zh
    assert "cos" in result.tried[0]


def test_lab02_2_an_ignored_forward_is_named_not_a_crash():
    class FixedPool(MaskedPool):
        @torch.jit.ignore
        def forward(self, x, mask=None, scale=None):
            return super().forward(x, mask, scale)

    result = expect_wrong("lab02.2", lambda: FixedPool)
    assert "without compiling forward" in result.en and "没有编译 forward" in result.zh
    assert "AttributeError" not in str(result.got)


def test_lab02_2_an_unused_forward_is_named():
    class FixedPool(MaskedPool):
        @torch.jit.unused
        def forward(self, x, mask=None, scale=None):
            return super().forward(x, mask, scale)

    result = expect_wrong("lab02.2", lambda: FixedPool)
    assert "@torch.jit.ignore or @torch.jit.unused" in result.en and "@torch.jit.unused" in result.zh


def test_lab02_3_an_extra_peephole_pass_is_named():
    def run_passes(graph):
        for run in (C._jit_pass_cse, C._jit_pass_constant_propagation, C._jit_pass_peephole, C._jit_pass_dce):
            run(graph)
        return graph

    result = expect_wrong("lab02.3", run_passes)
    assert "another pass ran as well" in result.en and "还运行了别的 pass" in result.zh
    assert "Float(3)" in result.tried[0]


def test_lab02_3_passes_run_twice_still_pass():
    def run_passes(graph):
        for _ in range(2):
            for run in (C._jit_pass_dce, C._jit_pass_cse, C._jit_pass_constant_propagation):
                run(graph)
        return graph

    expect_passed("lab02.3", run_passes)


# -- third fix round (att2-l00) ---------------------------------------------------------------------
@pytest.mark.parametrize("pattern", [r"(?<![\w:])((?:aten|prim)::\w+)(?=[\[(])", r"= (\w+::\w+)"])
def test_lab02_1_counting_from_the_printed_graph_is_named(pattern):
    import re

    def count_kinds(graph):
        return dict(Counter(re.findall(pattern, str(graph))))

    result = expect_wrong("lab02.1", count_kinds)
    assert "bad = aten::relu(x)" in result.tried[0]
    assert "printed text of the graph" in result.en and "打印文本" in result.zh


def _multiplied_mask_as_is():
    class MultipliedMaskPool(MaskedPool):
        def forward(self, x, mask: Optional[torch.Tensor] = None, scale: Optional[float] = None):
            h = self.proj(x)
            if mask is not None:
                h = h * mask
            if scale is None:
                scale = 1.0 / h.shape[-1]
            return h.sum(-1) * scale
    return MultipliedMaskPool


def _multiplied_mask_in_dtype():
    class MultipliedMaskPool(MaskedPool):
        def forward(self, x, mask: Optional[torch.Tensor] = None, scale: Optional[float] = None):
            h = self.proj(x)
            if mask is not None:
                h = h * mask.to(h.dtype)
            if scale is None:
                scale = 1.0 / h.shape[-1]
            return h.sum(-1) * scale
    return MultipliedMaskPool


@pytest.mark.parametrize("make", [_multiplied_mask_as_is, _multiplied_mask_in_dtype])
def test_lab02_2_multiplying_by_the_mask_is_named(make):
    result = expect_wrong("lab02.2", make)
    assert "x[0, 0] is inf" in result.tried[0] and "x[0, 0] 为 inf" in result.tried[1]
    assert "0 · inf = NaN" in result.en and "0 · inf = NaN" in result.zh and "直接替换为 0" in result.zh


def test_lab02_2_where_instead_of_masked_fill_passes():
    class WherePool(MaskedPool):
        def forward(self, x, mask: Optional[torch.Tensor] = None, scale: Optional[float] = None):
            h = self.proj(x)
            if mask is not None:
                h = torch.where(mask, h, torch.zeros_like(h))
            if scale is None:
                scale = 1.0 / h.shape[-1]
            return h.sum(-1) * scale

    expect_passed("lab02.2", lambda: WherePool)


@pytest.mark.parametrize("extra", ["constant_pooling", "lower_all_tuples"])
def test_lab02_3_an_extra_pass_that_pools_or_lowers_is_named(extra):
    def run_passes(graph):
        for run in (C._jit_pass_cse, C._jit_pass_constant_propagation, C._jit_pass_dce,
                    getattr(C, f"_jit_pass_{extra}")):
            run(graph)
        return graph

    result = expect_wrong("lab02.3", run_passes)
    assert "another pass ran as well" in result.en and "还运行了别的 pass" in result.zh
    assert ("prim::Constant[value=2]" if extra == "constant_pooling" else "prim::TupleConstruct") in result.tried[0]
