"""Checkers of lab05 (FX limits): references pass, stubs are not implemented, classic mistakes are named."""
from __future__ import annotations

import copy

import pytest
import torch
from torch import fx

from fxcourse import check, hint
from fxcourse._lang import text
from fxcourse.checks import task_ids
from fxcourse.tooling.labs import STUB

from checking import expect_one_language, expect_passed, expect_wrong, solution


def _stub(*args):
    raise NotImplementedError(STUB.split('"')[1])


# -- reference answers (the solutions notebook's) -------------------------------------------
def trace_for_mode(model, mode):
    return fx.symbolic_trace(model, concrete_args={"mode": mode})


def trace_with_leaves(model, leaf_types):
    class LeafTracer(fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return isinstance(m, leaf_types) or super().is_leaf_module(m, module_qualified_name)

    tracer = LeafTracer()
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph)


def trace_keeping(model, fn):
    tracer = fx.Tracer(autowrap_functions=(fn,))
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph)


def position_ids_fx(lengths):
    pos = torch.arange(lengths.max())
    return torch.where(pos < lengths[:, None], pos, -1)


REFERENCES = {"lab05.1": trace_for_mode, "lab05.2": trace_with_leaves, "lab05.3": trace_keeping,
              "lab05.4": position_ids_fx}
SOLUTION_NAMES = {"lab05.1": "trace_for_mode", "lab05.2": "trace_with_leaves", "lab05.3": "trace_keeping",
                  "lab05.4": "position_ids_fx"}


@pytest.mark.parametrize("task_id", sorted(SOLUTION_NAMES))
def test_solution_passes(task_id):
    expect_passed(task_id, solution("lab05", SOLUTION_NAMES[task_id]))


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_the_tests_own_answers_pass(task_id):
    expect_passed(task_id, REFERENCES[task_id])


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_every_task_has_a_hint_ladder_that_names_a_lecture_section(task_id):
    steps = [hint(task_id, level=k) for k in (1, 2)]
    assert all(step.level for step in steps) and "Lecture 05" in steps[1].en and "第 05 讲" in steps[1].zh
    assert all("concrete_args={" not in step.en and "autowrap_functions" not in step.en for step in steps)


def _no_pasteable_code(result):
    for text in (result.en, result.zh):
        for code in ("concrete_args={", "autowrap_functions=(", "fx.GraphModule(tracer.root", "super().is_leaf_module(",
                     "torch.arange(lengths", "lengths[:, None]"):
            assert code not in text, text


# -- lab05.1: concrete_args -----------------------------------------------------------------
def test_lab05_1_accepts_a_tracer_with_concrete_args():
    def with_tracer(model, mode):
        tracer = fx.Tracer()
        graph = tracer.trace(model, concrete_args={"mode": mode})
        return fx.GraphModule(tracer.root, graph)
    expect_passed("lab05.1", with_tracer)


def test_lab05_1_rejects_a_misspelled_concrete_args_key():
    result = expect_wrong("lab05.1", lambda m, mode: fx.symbolic_trace(m, concrete_args={"modes": mode}))
    assert "spelled exactly" in result.en and "参数名" in result.zh and result.got.startswith("TraceError")
    _no_pasteable_code(result)


def test_lab05_1_rejects_a_hard_coded_mode():
    result = expect_wrong("lab05.1", lambda m, mode: fx.symbolic_trace(m, concrete_args={"mode": "max"}))
    assert "`mode` argument" in result.en and "specialised to 'max'" in text(result.got) and "写死" in result.zh


def test_lab05_1_rejects_the_eager_model():
    result = expect_wrong("lab05.1", lambda m, mode: m)
    assert "eager model" in result.en and "eager" in result.zh


def test_lab05_1_rejects_a_wrapper_without_the_guard():
    class Fixed(torch.nn.Module):
        def __init__(self, model, mode):
            super().__init__()
            self.model, self.mode = model, mode

        def forward(self, x):
            return self.model(x, self.mode)

    def via_wrapper(model, mode):
        class Tracer(fx.Tracer):  # keep the wrapped model opaque so tracing succeeds
            def is_leaf_module(self, m, name):
                return m is model or super().is_leaf_module(m, name)

        root = Fixed(model, mode)
        tracer = Tracer()
        graph = tracer.trace(root)
        return fx.GraphModule(root, graph)

    result = expect_wrong("lab05.1", via_wrapper)
    assert "no guard" in text(result.got) and "concrete_args" in result.en and "守卫" in result.zh
    _no_pasteable_code(result)


# -- lab05.2: leaf modules ------------------------------------------------------------------
def _tracer_answer(is_leaf):
    def answer(model, leaf_types):
        class T(fx.Tracer):
            def is_leaf_module(self, m, name):
                return is_leaf(self, m, name, leaf_types)

        tracer = T()
        graph = tracer.trace(model)
        return fx.GraphModule(tracer.root, graph)
    return answer


def test_lab05_2_rejects_every_module_as_a_leaf():
    result = expect_wrong("lab05.2", _tracer_answer(lambda self, m, name, types: True))
    assert "custom module became a leaf" in result.en and "pre" in result.got and "叶子" in result.zh
    _no_pasteable_code(result)


def test_lab05_2_rejects_forgetting_the_default_rule():
    result = expect_wrong("lab05.2", _tracer_answer(lambda self, m, name, types: isinstance(m, types)))
    assert "default answer" in result.en and "默认" in result.zh
    _no_pasteable_code(result)


def test_lab05_2_rejects_choosing_leaves_by_name():
    by_name = _tracer_answer(lambda self, m, name, types: name in {"gate", "clip"}
                             or fx.Tracer.is_leaf_module(self, m, name))
    result = expect_wrong("lab05.2", by_name)
    assert "not by its name" in result.en and "名字" in result.zh and result.got.startswith("TraceError")


def test_lab05_2_rejects_returning_the_graph():
    def graph_only(model, leaf_types):
        return trace_with_leaves(model, leaf_types).graph
    result = expect_wrong("lab05.2", graph_only)
    assert "cannot run on its own" in result.en and "不能运行" in result.zh
    _no_pasteable_code(result)


def test_lab05_2_rejects_reading_root_before_tracing():
    def root_first(model, leaf_types):
        tracer = fx.Tracer()
        return fx.GraphModule(tracer.root, tracer.trace(model))  # noqa: the classic ordering bug
    result = expect_wrong("lab05.2", root_first)
    assert "left to right" in result.en and "从左到右" in result.zh
    _no_pasteable_code(result)


# -- lab05.3: a helper kept as one call_function ---------------------------------------------
def test_lab05_3_rejects_fx_wrap_inside_the_function():
    def wrap_inside(model, fn):
        fx.wrap(fn)
        return fx.symbolic_trace(model)
    result = expect_wrong("lab05.3", wrap_inside)
    assert "top level" in result.en and "顶层" in result.zh and "top level" in result.got
    _no_pasteable_code(result)


def test_lab05_3_rejects_plain_symbolic_trace():
    result = expect_wrong("lab05.3", lambda model, fn: fx.symbolic_trace(model))
    assert "another module" in result.en and "take_first" in result.en and "另一个模块" in result.zh
    _no_pasteable_code(result)


def weighted_merge(parts):  # the notebook's own helper, not the one the checker passes
    out = parts[0]
    for i in range(1, len(parts)):
        out = out + parts[i] / (i + 1)
    return out


def test_lab05_3_rejects_keeping_the_notebooks_helper_instead_of_fn():
    def notebook_helper(model, fn):
        tracer = fx.Tracer(autowrap_functions=(weighted_merge,))
        graph = tracer.trace(model)
        return fx.GraphModule(tracer.root, graph)
    result = expect_wrong("lab05.3", notebook_helper)
    assert "not the notebook's own helper" in result.en and "notebook 自己的辅助函数" in result.zh


def test_lab05_3_rejects_a_leaf_tracer_that_traces_into_the_helper():
    result = expect_wrong("lab05.3", lambda model, fn: trace_with_leaves(model, (torch.nn.Linear,)))
    assert "went into the helper" in result.en and "内部" in result.zh


# -- lab05.4: a value-dependent size that FX can trace ----------------------------------------
def test_lab05_4_accepts_item():
    def with_item(lengths):
        pos = torch.arange(lengths.max().item())
        return torch.where(pos < lengths[:, None], pos, -1)
    expect_passed("lab05.4", with_item)


def test_lab05_4_accepts_masked_fill_on_a_broadcast():
    def with_masked_fill(lengths):
        pos = torch.arange(lengths.max()) + torch.zeros_like(lengths)[:, None]
        return pos.masked_fill(pos >= lengths[:, None], -1)
    expect_passed("lab05.4", with_masked_fill)


def test_lab05_4_names_int_of_a_proxy():
    def with_int(lengths):
        pos = torch.arange(int(lengths.max()))
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", with_int)
    assert "int(...)" in result.en and "int(...)" in result.zh and result.got.startswith("TypeError")
    _no_pasteable_code(result)


def test_lab05_4_names_len_of_a_proxy():
    def with_len(lengths):
        n = lengths.max()
        pos = torch.arange(n).expand(len(lengths), -1)
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", with_len)
    assert "len(...)" in result.en and "广播" in result.zh and "int(...)" not in result.en


def test_lab05_4_names_a_python_branch_on_a_traced_value():
    def with_if(lengths):
        pos = torch.arange(lengths.max())
        if (lengths == 0).any():
            return torch.full((lengths.shape[0], 0), -1)
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", with_if)
    assert "Python branch" in result.en and "分支" in result.zh and "int(...)" not in result.en


def test_lab05_4_rejects_a_fixed_width():
    def fixed(lengths):
        pos = torch.arange(8)
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", fixed)
    assert "largest length" in result.en and "宽度" in result.zh and "(3, 4)" in result.expected


def test_lab05_4_rejects_zero_padding():
    def zero_padding(lengths):
        pos = torch.arange(lengths.max())
        return torch.where(pos < lengths[:, None], pos, 0)
    result = expect_wrong("lab05.4", zero_padding)
    assert "do not hold -1" in result.en and "-1" in result.zh and "width" not in result.en


def test_lab05_4_rejects_one_slot_too_many():
    def inclusive(lengths):
        pos = torch.arange(lengths.max())
        return torch.where(pos <= lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", inclusive)
    assert "one position too many" in result.en and "多了一个位置" in result.zh


def test_lab05_4_rejects_float_positions():
    def floats(lengths):
        pos = torch.arange(lengths.max()).float()
        return torch.where(pos < lengths[:, None], pos, -1.0)
    result = expect_wrong("lab05.4", floats)
    assert "torch.int64" in result.en and "dtype" in result.zh


# -- found by an adversarial review: near-misses a learner writes ---------------------------------
def test_lab05_2_rejects_comparing_the_exact_class():
    exact = _tracer_answer(lambda self, m, name, types: type(m) in types or fx.Tracer.is_leaf_module(self, m, name))
    result = expect_wrong("lab05.2", exact)
    assert "subclass" in result.en and "子类" in result.zh and "'soft'" in result.en
    _no_pasteable_code(result)


def test_lab05_2_rejects_comparing_class_names():
    by_class_name = _tracer_answer(lambda self, m, name, types: type(m).__name__ in {t.__name__ for t in types}
                                   or fx.Tracer.is_leaf_module(self, m, name))
    result = expect_wrong("lab05.2", by_class_name)
    assert "class name" in result.en and "类名" in result.zh


def test_lab05_2_rejects_keeping_an_nn_sequential_whole():
    every_torch_module = _tracer_answer(lambda self, m, name, types: isinstance(m, types)
                                        or m.__module__.startswith("torch.nn"))
    result = expect_wrong("lab05.2", every_torch_module)
    assert "body became one call_module" in result.en and "nn.Sequential" in result.zh
    assert "traced through instead" not in result.en  # the old, misleading diagnosis
    _no_pasteable_code(result)


def test_lab05_3_rejects_autowrapping_the_whole_module():
    import sys

    def whole_module(model, fn):
        tracer = fx.Tracer(autowrap_modules=(sys.modules[fn.__module__],))
        graph = tracer.trace(model)
        return fx.GraphModule(tracer.root, graph)
    result = expect_wrong("lab05.3", whole_module)
    assert "centre became call_function" in result.en and "所在模块的所有函数" in result.zh
    _no_pasteable_code(result)


def test_lab05_3_accepts_a_list_of_functions_and_the_model_as_root():
    def as_list(model, fn):
        graph = fx.Tracer(autowrap_functions=[fn]).trace(model)
        return fx.GraphModule(model, graph)
    expect_passed("lab05.3", as_list)


def test_lab05_4_names_one_column_too_many():
    def wide(lengths):
        pos = torch.arange(lengths.max() + 1)
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", wide)
    assert "one column too many" in result.en and "多了一列" in result.zh and "(3, 5)" in result.got


def test_lab05_4_width_from_the_sum_is_not_blamed_on_the_trace_alone():
    def summed(lengths):
        pos = torch.arange(lengths.sum())
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", summed)
    assert "not this input's largest length" in result.en and "最大长度" in result.zh


def test_lab05_1_names_a_removed_guard():
    def without_guard(model, mode):
        gm = fx.symbolic_trace(model, concrete_args={"mode": mode})
        for node in list(gm.graph.nodes):
            if node.op == "call_function" and node.target is torch._assert:
                gm.graph.erase_node(node)
        gm.recompile()
        return gm
    result = expect_wrong("lab05.1", without_guard)
    assert "guard for it is gone" in result.en and "守卫不见了" in result.zh and "mode_1" in text(result.got)
    _no_pasteable_code(result)


# -- one language at a time ----------------------------------------------------------------------
def _fixed_width(lengths):
    pos = torch.arange(8)
    return torch.where(pos < lengths[:, None], pos, -1)


def _autowrap_whole_module(model, fn):
    import sys

    tracer = fx.Tracer(autowrap_modules=(sys.modules[fn.__module__],))
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph)


ONE_WRONG_ANSWER = {
    "lab05.1": lambda m, mode: fx.symbolic_trace(m, concrete_args={"mode": "max"}),
    "lab05.2": _tracer_answer(lambda self, m, name, types: True),
    "lab05.3": _autowrap_whole_module,
    "lab05.4": _fixed_width,  # its details are code and values only: the same in both languages
}


def test_every_lab05_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab05.")]


@pytest.mark.parametrize("task_id", sorted(ONE_WRONG_ANSWER))
def test_lab05_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, ONE_WRONG_ANSWER[task_id], monkeypatch, worded=task_id != "lab05.4")


# ------------------------------------------------------------------ issue 30: classes the probes missed


def _switches_to_eval(answer):
    def switched(model, arg):
        model.eval()  # "tracing is for inference": changes the caller's model
        return answer(model, arg)
    return switched


def _traces_an_eval_copy(answer):
    def on_copy(model, arg):
        return answer(copy.deepcopy(model).eval(), arg)
    return on_copy


@pytest.mark.parametrize("task_id, fn", [("lab05.1", "trace_for_mode"), ("lab05.2", "trace_with_leaves"),
                                         ("lab05.3", "trace_keeping")])
def test_model_eval_on_the_handed_model_is_named(task_id, fn):
    # the checker used to put every model in eval mode itself, so this passed
    result = expect_wrong(task_id, _switches_to_eval(solution("lab05", SOLUTION_NAMES[task_id])))
    assert f"{fn} switched the model it was handed to eval mode" in result.en
    assert "调用者的模型" in result.zh and "eval 模式" in result.zh


@pytest.mark.parametrize("task_id", ["lab05.1", "lab05.2", "lab05.3"])
def test_tracing_a_copy_switched_to_eval_is_named(task_id):
    result = expect_wrong(task_id, _traces_an_eval_copy(solution("lab05", SOLUTION_NAMES[task_id])))
    assert "traced a copy in another mode" in result.en and "切换了模式的副本" in result.zh
    assert "处于训练模式" in result.zh


@pytest.mark.parametrize("task_id", ["lab05.1", "lab05.2", "lab05.3"])
def test_tracing_a_plain_copy_in_the_same_mode_passes(task_id):
    def on_copy(model, arg):
        return solution("lab05", SOLUTION_NAMES[task_id])(copy.deepcopy(model), arg)
    expect_passed(task_id, on_copy)


def test_lab05_4_a_fixed_table_longer_than_every_earlier_probe_is_named():
    # the largest length probed was 9, so a table of 32 positions cut to the batch's width passed
    def position_ids_fx(lengths):
        pos = torch.arange(32)
        return torch.where(pos < lengths[:, None], pos, -1)[:, :lengths.max()]
    result = expect_wrong("lab05.4", position_ids_fx)
    assert "width" in result.en and "fixed in the code" in result.en and "写死" in result.zh
    assert "46" in text(result.tried)


def test_lab05_4_a_cumulative_sum_of_ones_passes():
    def position_ids_fx(lengths):
        ones = torch.ones_like(torch.arange(lengths.max())).expand(lengths.shape[0], -1)
        pos = ones.cumsum(-1) - 1
        return torch.where(pos < lengths[:, None], pos, -1)
    expect_passed("lab05.4", position_ids_fx)


# -- second attack: a second defaulted parameter, a leaf found by its last name, FX's global wrap table,
#    int32 lengths, a fixed table of positions
def test_lab05_1_fixing_every_parameter_after_x_is_named():
    import inspect

    def every_parameter(model, mode):  # forward(x, mode, temp=2.0): temp fixed to the mode string too
        names = list(inspect.signature(model.forward).parameters)[1:]
        return fx.symbolic_trace(model, concrete_args={name: mode for name in names})
    result = expect_wrong("lab05.1", every_parameter)
    assert "'temp'" in result.en and "only mode" in result.en
    assert "'temp'" in result.zh and "只应特化 mode" in result.zh and "_Tempered" in text(result.tried)


def test_lab05_1_fixing_the_other_parameters_to_their_defaults_is_named():
    import inspect

    def defaults_too(model, mode):
        fixed = {name: p.default for name, p in inspect.signature(model.forward).parameters.items()
                 if p.default is not inspect.Parameter.empty and name != "mode"}
        return fx.symbolic_trace(model, concrete_args={**fixed, "mode": mode})
    result = expect_wrong("lab05.1", defaults_too)
    assert "'temp'" in result.en and "stays an input of the graph" in result.en and "计算图的输入" in result.zh


def test_lab05_2_a_leaf_chosen_by_the_last_part_of_its_name_is_named():
    # a.clip is a leaf-type module, b.clip a traceable block of another class
    def by_last_name(self, m, name, types):
        last = {n.rsplit(".", 1)[-1] for n, mm in self.root.named_modules() if isinstance(mm, types)}
        return name.rsplit(".", 1)[-1] in last or fx.Tracer.is_leaf_module(self, m, name)
    result = expect_wrong("lab05.2", _tracer_answer(by_last_name))
    assert "'b.clip'" in result.en and "'a.clip'" in result.en and "not by its name" in result.en
    assert "'b.clip'" in result.zh and "不是按名字" in result.zh
    assert "_NetE" in text(result.tried)


def test_lab05_2_a_set_of_the_leaf_modules_full_names_passes():
    def by_full_name(model, leaf_types):
        names = {n for n, m in model.named_modules() if isinstance(m, leaf_types)}

        class T(fx.Tracer):
            def is_leaf_module(self, m, name):
                return name in names or super().is_leaf_module(m, name)
        return fx.GraphModule(model, T().trace(model))
    expect_passed("lab05.2", by_full_name)


def test_lab05_3_registering_fn_in_fxs_global_wrap_table_is_named():
    from torch.fx import _symbolic_trace as st

    before = dict(st._wrapped_fns_to_patch)

    def global_wrap(model, fn):
        st._wrapped_fns_to_patch[(id(fn.__globals__), fn.__name__)] = fn.__globals__
        return fx.symbolic_trace(model)
    try:
        result = expect_wrong("lab05.3", global_wrap)
    finally:
        st._wrapped_fns_to_patch.clear()
        st._wrapped_fns_to_patch.update(before)
    assert "process-wide table" in result.en and "'take_first'" in result.en
    assert "整个进程范围" in result.zh and "全局状态" in result.zh


@pytest.mark.parametrize("spelling", ["where, then .to(lengths.dtype)", "arange in lengths.dtype"])
def test_lab05_4_positions_in_the_dtype_of_lengths_are_named(spelling):
    def as_lengths(lengths):
        pos = torch.arange(lengths.max())
        return torch.where(pos < lengths[:, None], pos, -1).to(lengths.dtype)

    def arange_like(lengths):
        n = lengths.max()
        pos = torch.arange(n, dtype=lengths.dtype).expand(lengths.size(0), n)
        return pos.masked_fill(pos >= lengths[:, None], -1)
    result = expect_wrong("lab05.4", as_lengths if spelling.startswith("where") else arange_like)
    assert "torch.int64" in result.en and "dtype" in result.zh and "int32" in text(result.tried)


def test_lab05_4_a_table_of_1024_positions_is_named():
    def table(lengths):
        pos = torch.arange(1024)
        mask = pos < lengths[:, None]
        return torch.where(mask, pos, -1).narrow(1, 0, mask.any(0).sum())
    result = expect_wrong("lab05.4", table)
    assert "width" in result.en and "fixed in the code" in result.en and "写死" in result.zh
    assert "2000" in text(result.tried)


def test_lab05_1_mode_found_by_position_is_named():
    import inspect

    def second_parameter(model, mode):
        name = list(inspect.signature(model.forward).parameters)[1]
        return fx.symbolic_trace(model, concrete_args={name: mode})
    result = expect_wrong("lab05.1", second_parameter)
    assert "_LateMode" in text(result.tried) and "TraceError" in text(result.got)
    assert "not its second parameter" in result.en and "temp=1.0" in result.en
    assert "不是它的第二个参数" in result.zh and "按名字找它" in result.zh


def test_lab05_1_mode_found_by_name_in_the_signature_passes():
    import inspect

    def by_name(model, mode):
        names = [p for p in inspect.signature(model.forward).parameters if p == "mode"]
        return fx.symbolic_trace(model, concrete_args={names[0]: mode})
    expect_passed("lab05.1", by_name)


def test_lab05_4_a_width_rounded_by_bfloat16_is_named():
    def through_bfloat16(lengths):
        pos = torch.arange(lengths.max().to(torch.bfloat16)).long()
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", through_bfloat16)
    assert "70000" in text(result.tried)
    assert "rounded by a low-precision float" in result.en and "70144" in result.en
    assert "低精度浮点数舍入" in result.zh
