"""Checkers of lab01 (TorchScript trace): the references from solutions/ pass, other right forms
pass, stubs are not implemented, and the mistakes learners make are rejected and named in both
languages."""
from __future__ import annotations

import copy
import io
import warnings
from collections import Counter

import pytest
import torch
from torch import nn

from fxcourse import check, hint
from fxcourse._lang import text
from fxcourse.checks import task_ids
from fxcourse.tooling.labs import STUB

from checking import expect_one_language, expect_passed, expect_wrong, solution

pytestmark = pytest.mark.filterwarnings("ignore:`torch\\.jit\\.\\w+` is deprecated:Warning",
                                        "ignore::torch.jit.TracerWarning")

TASKS = {"lab01.1": "aten_op_counts", "lab01.2": "trace_safely", "lab01.3": "TraceableRunningMean",
         "lab01.4": "roundtrip"}


def _stub(*args):
    raise NotImplementedError(STUB.split('"')[1])


class _StubRunningMean(nn.Module):
    def forward(self, x):
        raise NotImplementedError(STUB.split('"')[1])


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_reference_answer_from_the_solutions_passes(task_id):
    expect_passed(task_id, solution("lab01", TASKS[task_id]))


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _StubRunningMean if task_id == "lab01.3" else _stub)
    assert result.status == "not_implemented", result.to_text()


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_hints_go_from_a_nudge_to_the_lecture_without_code(task_id):
    first = hint(task_id, 1)
    last = hint(task_id, first.count)
    assert 2 <= first.count <= 3
    assert "course/01_torchscript_trace.ipynb" in last.en and "course/01_torchscript_trace.ipynb" in last.zh
    for level in range(1, first.count + 1):
        step = hint(task_id, level)
        assert "torch.jit.trace(" not in step.en and "check_inputs=" not in step.en and "seek(0)" not in step.en


# -- lab01.1 ---------------------------------------------------------------------------------
def test_lab01_1_a_counter_and_a_loop_pass_too():
    expect_passed("lab01.1", lambda t: Counter(n.kind() for n in t.inlined_graph.nodes() if n.kind().startswith("aten::")))

    def by_loop(traced):
        counts = {}
        for node in traced.inlined_graph.nodes():
            if node.kind().startswith("aten::"):
                counts[node.kind()] = counts.get(node.kind(), 0) + 1
        return counts

    expect_passed("lab01.1", by_loop)


def test_lab01_1_top_level_graph_is_told_to_inline():
    result = expect_wrong("lab01.1", lambda t: dict(Counter(n.kind() for n in t.graph.nodes()
                                                           if n.kind().startswith("aten::"))))
    assert "inlined graph" in result.en and "内联后的计算图" in result.zh


def test_lab01_1_counting_prim_nodes_is_named():
    result = expect_wrong("lab01.1", lambda t: dict(Counter(n.kind() for n in t.inlined_graph.nodes())))
    assert "aten:: namespace" in result.en and "aten:: 命名空间" in result.zh


def test_lab01_1_kind_without_namespace_is_named():
    result = expect_wrong("lab01.1", lambda t: dict(Counter(n.kind().split("::")[1] for n in t.inlined_graph.nodes()
                                                           if n.kind().startswith("aten::"))))
    assert "full kind string" in result.en and "完整类型字符串" in result.zh


def test_lab01_1_each_kind_once_is_named():
    result = expect_wrong("lab01.1", lambda t: {n.kind(): 1 for n in t.inlined_graph.nodes()
                                                if n.kind().startswith("aten::")})
    assert "every count is 1" in result.en and "每个计数都是 1" in result.zh


# -- lab01.2 ---------------------------------------------------------------------------------
def test_lab01_1_inlining_the_trace_in_place_is_named():
    def inline_in_place(traced):
        graph = traced.graph
        torch._C._jit_pass_inline(graph)  # rewrites the module's own forward graph
        return dict(Counter(n.kind() for n in graph.nodes() if n.kind().startswith("aten::")))
    result = expect_wrong("lab01.1", inline_in_place)
    assert "changed the graph of the trace it was given" in result.en
    assert "改动了传入的追踪结果自身的计算图" in result.zh


def test_lab01_1_counting_the_output_values_is_named():
    def per_value(traced):  # aten::max over a dim is one node with two outputs
        return dict(Counter(v.node().kind() for n in traced.inlined_graph.nodes() if n.kind().startswith("aten::")
                            for v in n.outputs()))
    result = expect_wrong("lab01.1", per_value)
    assert "counted twice" in result.en and "被计了两次" in result.zh
    assert "max over a dim" in result.tried[0] and "按维度取 max" in result.tried[1]


def test_lab01_1_unusual_right_answers_pass():
    import numpy as np
    from collections import defaultdict

    def with_numpy(traced):  # np.int64 counts, np.str_ keys
        kinds = [n.kind() for n in traced.inlined_graph.nodes() if n.kind().startswith("aten::")]
        return dict(zip(*np.unique(kinds, return_counts=True)))

    def by_namespace(traced):
        counts = defaultdict(int)
        for node in traced.inlined_graph.nodes():
            if node.kind().split("::")[0] == "aten":
                counts[node.kind()] += 1
        return counts

    def find_all(traced):
        graph = traced.inlined_graph
        kinds = {n.kind() for n in graph.nodes() if not n.kind().startswith("prim::")}
        return {kind: len(graph.findAllNodes(kind)) for kind in kinds}

    for answer in (with_numpy, by_namespace, find_all):
        expect_passed("lab01.1", answer)


def test_lab01_2_checking_the_rest_of_the_inputs_passes():
    def rest(model, inputs):
        try:
            return torch.jit.trace(model, inputs[0], check_inputs=inputs[1:])
        except torch.jit.TracingCheckError:
            return None

    expect_passed("lab01.2", rest)


def test_lab01_2_only_the_last_input_is_named():
    def only_last(model, inputs):
        try:
            return torch.jit.trace(model, inputs[0], check_inputs=[inputs[-1]])
        except torch.jit.TracingCheckError:
            return None

    result = expect_wrong("lab01.2", only_last)
    assert "inputs[1]" in result.en and "not only the first or the last" in result.en
    assert "不只是第一组或最后一组" in result.zh


def test_lab01_2_only_the_first_two_inputs_is_named():
    def first_two(model, inputs):
        try:
            return torch.jit.trace(model, inputs[0], check_inputs=inputs[:2])
        except torch.jit.TracingCheckError:
            return None

    result = expect_wrong("lab01.2", first_two)
    assert "inputs[2]" in result.en and "every tuple" in result.en and "每一组" in result.zh


def test_lab01_2_always_none_is_wrong():
    result = expect_wrong("lab01.2", lambda m, inputs: None)
    assert "no control flow" in result.en and "没有控制流" in result.zh


def test_lab01_2_none_on_any_tracer_warning_is_too_strict():
    reference = solution("lab01", "trace_safely")

    def on_warning(model, inputs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traced = reference(model, inputs)
        if any(issubclass(w.category, torch.jit.TracerWarning) for w in caught):
            return None
        return traced

    result = expect_wrong("lab01.2", on_warning)
    assert "TracerWarning" in result.en and "TracerWarning" in result.zh and result.got == "None"


def test_lab01_2_forgetting_check_inputs_is_named():
    result = expect_wrong("lab01.2", lambda m, inputs: torch.jit.trace(m, inputs[0]))
    assert "inputs[2]" in result.en and "inputs[2]" in result.zh
    assert "check_inputs=" not in result.en and "check_inputs=" not in result.zh  # no code to paste


def test_lab01_2_comparing_outputs_only_is_caught_by_the_abs_model():
    def by_outputs(model, inputs):
        traced = torch.jit.trace(model, inputs[0], check_trace=False)
        for args in inputs:
            try:
                same = torch.allclose(traced(*args), model(*args))
            except RuntimeError:
                same = False
            if not same:
                return None
        return traced

    result = expect_wrong("lab01.2", by_outputs)
    assert "aten::neg" in result.en and "compares the graphs" in result.en and "比较计算图" in result.zh


def test_lab01_2_uncaught_tracing_check_error_is_named():
    result = expect_wrong("lab01.2", lambda m, inputs: torch.jit.trace(m, inputs[0], check_inputs=inputs))
    assert "TracingCheckError" in result.en and "TracingCheckError" in result.zh
    assert result.got.startswith("TracingCheckError")


def test_lab01_2_returning_the_model_is_wrong():
    result = expect_wrong("lab01.2", lambda m, inputs: m)
    assert "not the model" in result.en and "而不是模型本身" in result.zh


def test_lab01_2_tracing_with_the_first_argument_only_is_wrong():
    def first_tensor(model, inputs):
        try:
            return torch.jit.trace(model, inputs[0][0], check_inputs=inputs)
        except torch.jit.TracingCheckError:
            return None
        except TypeError:
            return None

    result = expect_wrong("lab01.2", first_tensor)
    assert "two arguments" in text(result.tried) and "no control flow" in result.en


# -- lab01.3 ---------------------------------------------------------------------------------
class LoopMean(nn.Module):
    def forward(self, x):
        total = torch.zeros_like(x[0])
        out = []
        for t in range(x.shape[0]):
            total = total + x[t]
            out.append(total / (t + 1))
        return torch.stack(out)


class LenMean(nn.Module):
    def forward(self, x):
        return x.cumsum(0) / torch.arange(1, len(x) + 1, dtype=x.dtype).unsqueeze(1)


def test_lab01_3_another_right_form_passes():
    class SizeMean(nn.Module):
        def forward(self, x):
            n = torch.ones_like(x).cumsum(0)
            return x.cumsum(0) / n

    expect_passed("lab01.3", SizeMean)


def test_lab01_3_python_loop_is_named_as_unrolled():
    result = expect_wrong("lab01.3", LoopMean)
    assert "unrolled" in result.en and "展开" in result.zh and "(5, 4)" in text(result.tried)


def test_lab01_3_len_is_named_as_baked_in():
    result = expect_wrong("lab01.3", LenMean)
    assert "baked into the trace" in result.en and "固化" in result.zh
    assert "torch.arange(" not in result.en and "cumsum" not in result.en  # no code to paste


def test_lab01_3_divisors_from_zero_are_named():
    class FromZero(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / torch.arange(0, x.shape[0], dtype=x.dtype).unsqueeze(1)

    result = expect_wrong("lab01.3", FromZero)
    assert "divided by 0" in result.en and "除以了 0" in result.zh


def test_lab01_3_dividing_by_the_total_is_named():
    class TotalMean(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / x.shape[0]

    result = expect_wrong("lab01.3", TotalMean)
    assert "total number of rows" in result.en and "总行数" in result.zh


def test_lab01_3_running_sum_without_division_is_named():
    class RunningSum(nn.Module):
        def forward(self, x):
            return x.cumsum(0)

    result = expect_wrong("lab01.3", RunningSum)
    assert "running sum" in result.en and "累积和" in result.zh


def test_lab01_3_wrong_dimension_is_named():
    class ColumnMean(nn.Module):
        def forward(self, x):
            return x.cumsum(1) / torch.arange(1, x.shape[1] + 1, dtype=x.dtype)

    result = expect_wrong("lab01.3", ColumnMean)
    assert "first dimension" in result.en and "第一维" in result.zh


# -- lab01.4 ---------------------------------------------------------------------------------
def test_lab01_4_a_fresh_buffer_from_the_bytes_passes():
    def from_bytes(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        return torch.jit.load(io.BytesIO(buffer.getvalue()))

    expect_passed("lab01.4", from_bytes)


def test_lab01_4_returning_the_model_is_not_a_loaded_module():
    result = expect_wrong("lab01.4", lambda m, ex: m)
    assert "torch.jit.load" in result.en and "torch.jit.load" in result.zh


def test_lab01_4_returning_the_trace_itself_is_named():
    result = expect_wrong("lab01.4", lambda m, ex: torch.jit.trace(m, ex))
    assert "shares its tensors" in result.en and "共享张量" in result.zh


def test_lab01_4_saving_the_nn_module_is_told_to_trace_first():
    def save_module(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(model, buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)

    result = expect_wrong("lab01.4", save_module)
    assert "trace the model first" in result.en and "先追踪模型" in result.zh and "save_to_buffer" in result.got


def test_lab01_4_forgetting_to_rewind_is_named():
    def no_seek(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        return torch.jit.load(buffer)

    result = expect_wrong("lab01.4", no_seek)
    assert "position" in result.en and "回到开头" in result.zh
    assert "seek(0)" not in result.en  # no code to paste


def test_lab01_4_tracing_with_the_first_tensor_only_is_named():
    def first_only(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs[0]), buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)

    result = expect_wrong("lab01.4", first_only)
    assert "whole tuple" in result.en and "整个 tuple" in result.zh


def test_lab01_1_skipping_the_first_node_is_wrong():
    def skip_first(traced):
        nodes = list(traced.inlined_graph.nodes())[1:]
        return dict(Counter(n.kind() for n in nodes if n.kind().startswith("aten::")))

    result = expect_wrong("lab01.1", skip_first)
    assert "relu, sin, neg" in text(result.tried) and "a count is off" in result.en and "有计数不对" in result.zh


def test_lab01_1_the_kind_method_as_key_is_named():
    result = expect_wrong("lab01.1", lambda traced: dict(Counter(n.kind for n in traced.inlined_graph.nodes())))
    assert "bound methods" in result.en and "绑定方法" in result.zh


def test_lab01_3_a_float64_divisor_is_named():
    class Float64Mean(nn.Module):
        def forward(self, x):
            n = torch.arange(1, x.shape[0] + 1, dtype=torch.float64).unsqueeze(1)
            return x.cumsum(0) / n

    result = expect_wrong("lab01.3", Float64Mean)
    assert "dtype" in result.en and "dtype" in result.zh and "float64" in result.got


def test_lab01_3_divisors_along_the_wrong_axis_say_which_input():
    class FlatDivisors(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / torch.arange(1, x.shape[0] + 1, dtype=x.dtype)

    result = expect_wrong("lab01.3", FlatDivisors)
    assert "line up with the rows" in result.en and "与行对齐" in result.zh and "shape (4, 3)" in text(result.tried)


def test_lab01_3_in_place_message_names_the_module_in_both_languages():
    class InPlace(nn.Module):
        def forward(self, x):
            return x.cumsum_(0) / torch.arange(1, x.shape[0] + 1, dtype=x.dtype).unsqueeze(1)

    result = expect_wrong("lab01.3", InPlace)
    assert result.zh.startswith("TraceableRunningMean() 原地修改了输入")


def test_lab01_4_a_deep_copy_of_the_trace_is_not_a_round_trip():
    def deep_copy(model, example_inputs):
        return copy.deepcopy(torch.jit.trace(model, example_inputs))

    result = expect_wrong("lab01.4", deep_copy)
    assert "did not come out of torch.jit.load" in result.en and "不是 torch.jit.load 读回来的" in result.zh


def test_lab01_4_loading_a_copy_of_the_bytes_passes():
    def through_getvalue(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        return torch.jit.load(io.BytesIO(buffer.getvalue()))

    expect_passed("lab01.4", through_getvalue)


# -- one language at a time ----------------------------------------------------------------------
ONE_WRONG_ANSWER = {
    "lab01.1": lambda t: dict(Counter(n.kind() for n in t.graph.nodes() if n.kind().startswith("aten::"))),
    "lab01.2": lambda m, inputs: None,
    "lab01.3": LoopMean,
    "lab01.4": lambda m, ex: torch.jit.trace(m, ex),
}


def test_every_lab01_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab01.")]


@pytest.mark.parametrize("task_id", sorted(ONE_WRONG_ANSWER))
def test_lab01_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, ONE_WRONG_ANSWER[task_id], monkeypatch)


# -- issue 30: the second attack ---------------------------------------------------------------
def _trace_checked(model, inputs):
    try:
        return torch.jit.trace(model, inputs[0], check_inputs=inputs)
    except torch.jit.TracingCheckError:
        return None


def test_lab01_2_switching_the_model_to_eval_is_named():
    def trace_safely(model, inputs):
        model.eval()
        return _trace_checked(model, inputs)

    result = expect_wrong("lab01.2", trace_safely)
    assert "changed the mode of the model" in result.en and "改变了传入模型的模式" in result.zh
    assert "training mode" in result.expected[0] and "eval mode" in result.got[0]


def test_lab01_2_comparing_node_kinds_of_separate_traces_is_named():
    def trace_safely(model, inputs):
        first = torch.jit.trace(model, inputs[0], check_trace=False)
        kinds = [n.kind() for n in first.inlined_graph.nodes()]
        for args in inputs[1:]:
            other = torch.jit.trace(model, args, check_trace=False)
            if [n.kind() for n in other.inlined_graph.nodes()] != kinds:
                return None
        return first

    result = expect_wrong("lab01.2", trace_safely)
    assert "node kinds, or the code text" in result.en and "节点种类一样" in result.zh


def test_lab01_2_tracer_warnings_as_errors_are_named_not_a_system_error():
    def trace_safely(model, inputs):
        with warnings.catch_warnings():
            warnings.simplefilter("error", torch.jit.TracerWarning)
            return _trace_checked(model, inputs)

    result = expect_wrong("lab01.2", trace_safely)
    assert "(TracerWarning) was turned into an error" in result.en and "（TracerWarning）被变成了错误" in result.zh
    assert "SystemError" not in str(result.got) and "TracerWarning" in str(result.got)


def test_lab01_2_every_warning_as_an_error_is_named():
    def trace_safely(model, inputs):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return _trace_checked(model, inputs)

    result = expect_wrong("lab01.2", trace_safely)
    assert "was turned into an error" in result.en and "被变成了错误" in result.zh


def test_lab01_2_right_answers_written_differently_pass():
    def listed(model, inputs):
        try:
            traced = torch.jit.trace(model, tuple(inputs[0]), check_inputs=list(inputs), check_trace=True)
        except torch.jit.TracingCheckError:
            traced = None
        return traced

    def quiet(model, inputs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _trace_checked(model, inputs)

    expect_passed("lab01.2", listed)
    expect_passed("lab01.2", quiet)


def test_lab01_3_a_divisor_table_of_fixed_length_is_named():
    class TraceableRunningMean(nn.Module):
        def forward(self, x):
            table = torch.arange(1, 9, dtype=x.dtype)
            return x.cumsum(0) / table[: x.shape[0]].unsqueeze(1)

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "fixed length" in result.en and "长度固定" in result.zh and "12 rows" in result.en


def test_lab01_3_a_long_table_still_runs_out_beyond_the_probes():
    class TraceableRunningMean(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("counts", torch.arange(1, 65, dtype=torch.float32))

        def forward(self, x):
            return x.cumsum(0) / self.counts[: x.shape[0]].to(x.dtype).unsqueeze(1)

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "fixed length" in result.en and "1100 rows" in result.en and "长度固定" in result.zh


def test_lab01_3_hard_coded_float32_is_named_on_float16():
    class TraceableRunningMean(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / torch.arange(1, x.shape[0] + 1, dtype=torch.float32).unsqueeze(1)

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "dtype is not the input's" in result.en and "dtype 与输入不同" in result.zh
    assert "float16" in result.tried[0] and "float32" in result.got


def test_lab01_3_computing_in_float32_is_named_on_float64():
    class TraceableRunningMean(nn.Module):
        def forward(self, x):
            x = x.float()
            return x.cumsum(0) / torch.arange(1, x.shape[0] + 1, dtype=x.dtype).unsqueeze(1)

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "dtype is not the input's" in result.en and "float64" in result.tried[0]


def test_lab01_3_right_answers_written_differently_pass():
    class OnesCumsum(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / torch.ones_like(x).cumsum(0)

    class Reciprocal(nn.Module):
        def forward(self, x):
            n = torch.arange(1, x.size(0) + 1, device=x.device).to(x.dtype)
            return torch.cumsum(x, dim=0) * (1.0 / n)[:, None]

    expect_passed("lab01.3", OnesCumsum)
    expect_passed("lab01.3", Reciprocal)


def _saved(module):
    buffer = io.BytesIO()
    torch.jit.save(module, buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)


def test_lab01_4_switching_the_model_to_eval_is_named():
    def roundtrip(model, example_inputs):
        model.eval()
        return _saved(torch.jit.trace(model, example_inputs))

    result = expect_wrong("lab01.4", roundtrip)
    assert "changed the mode of the model" in result.en and "改变了传入模型的模式" in result.zh
    assert "BatchNorm1d" in result.tried[0]


def test_lab01_4_scripting_instead_of_tracing_is_named():
    result = expect_wrong("lab01.4", lambda model, example_inputs: _saved(torch.jit.script(model)))
    assert "compiled with torch.jit.script, not traced" in result.en and "torch.jit.script 编译" in result.zh


def test_lab01_4_tracing_random_copies_of_the_inputs_is_named():
    def roundtrip(model, example_inputs):
        return _saved(torch.jit.trace(model, tuple(torch.randn_like(x) for x in example_inputs)))

    result = expect_wrong("lab01.4", roundtrip)
    assert "takes the other branch" in result.en and "另一个分支" in result.zh


def test_lab01_4_right_answers_written_differently_pass():
    def by_method(model, example_inputs):
        data = torch.jit.trace(model, tuple(example_inputs)).save_to_buffer()
        return torch.jit.load(io.BytesIO(data))

    def cloned_inputs(model, example_inputs):
        return _saved(torch.jit.trace(model, tuple(x.clone() for x in example_inputs)))

    expect_passed("lab01.4", by_method)
    expect_passed("lab01.4", cloned_inputs)


def test_lab01_4_freezing_a_model_in_training_mode_is_named():
    def roundtrip(model, example_inputs):
        return _saved(torch.jit.freeze(torch.jit.trace(model, example_inputs)))

    result = expect_wrong("lab01.4", roundtrip)
    assert "torch.jit.freeze works only on a module in eval mode" in result.en and "训练模式" in result.zh


# -- second fix round (att-l00) ---------------------------------------------------------------------
def _counted_after(*passes):
    def aten_op_counts(traced):
        graph = traced.inlined_graph.copy()
        for name in passes:
            getattr(torch._C, f"_jit_pass_{name}")(graph)
        return dict(Counter(n.kind() for n in graph.nodes() if n.kind().startswith("aten::")))
    return aten_op_counts


def test_lab01_1_common_subexpression_elimination_first_is_named():
    result = expect_wrong("lab01.1", _counted_after("cse"))
    assert "torch.cos(x) * torch.cos(x)" in str(result.tried[0])
    assert "cleaned before counting" in result.en and "统计之前计算图被清理过" in result.zh


def test_lab01_1_constant_propagation_first_is_named():
    result = expect_wrong("lab01.1", _counted_after("constant_propagation"))
    assert "torch.arange(3.0)" in str(result.tried[0])
    assert "cleaned before counting" in result.en and "统计之前计算图被清理过" in result.zh


def test_lab01_1_dead_code_elimination_first_still_passes():
    expect_passed("lab01.1", _counted_after("dce"))


def _separate_traces(same):
    def trace_safely(model, inputs):
        first = torch.jit.trace(model, inputs[0], check_trace=False)
        for args in inputs[1:]:
            other = torch.jit.trace(model, args, check_trace=False)
            if not same(first, other, args):
                return None
        return first
    return trace_safely


def test_lab01_2_comparing_node_kinds_and_outputs_of_separate_traces_is_named():
    def same(first, other, args):
        kinds = [n.kind() for n in first.inlined_graph.nodes()] == [n.kind() for n in other.inlined_graph.nodes()]
        return kinds and torch.allclose(first(*args), other(*args))

    result = expect_wrong("lab01.2", _separate_traces(same))
    assert "x.clamp(-5, 5)" in result.tried[0]
    assert "neither outputs nor node kinds" in result.en and "比较输出或节点种类都发现不了" in result.zh


def test_lab01_2_comparing_the_code_of_separate_traces_is_named_without_blaming_node_kinds():
    result = expect_wrong("lab01.2", _separate_traces(lambda first, other, args: first.code == other.code))
    assert "x * 3 and x * 0.5" in result.tried[0]
    assert "the code text" in result.en and "CONSTANTS.c0" in result.zh


def test_lab01_2_swallowing_every_error_is_named():
    def trace_safely(model, inputs):
        try:
            return torch.jit.trace(model, inputs[0], check_inputs=inputs)
        except Exception:
            return None

    result = expect_wrong("lab01.2", trace_safely)
    assert "cannot run on inputs[0]" in result.en and "let every other error propagate" in result.en
    assert "其他错误请让它照常抛出" in result.zh


def test_lab01_3_a_divisor_table_longer_than_most_inputs_is_named():
    class TraceableRunningMean(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / torch.arange(1, 5001, dtype=x.dtype)[: x.shape[0], None]

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "fixed length" in result.en and "1000000 rows" in result.en and "长度固定" in result.zh


def test_lab01_3_a_table_of_a_hundred_thousand_divisors_is_named():
    class TraceableRunningMean(nn.Module):
        def forward(self, x):
            return x.cumsum(0) / torch.arange(1, 100_001, dtype=x.dtype)[: x.shape[0], None]

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "fixed length" in result.en and "长度固定" in result.zh


def test_lab01_3_computing_in_float32_and_casting_back_is_named():
    class TraceableRunningMean(nn.Module):
        def forward(self, x):
            return (x.float().cumsum(0) / torch.arange(1, x.shape[0] + 1)[:, None]).to(x.dtype)

    result = expect_wrong("lab01.3", TraceableRunningMean)
    assert "1e8" in result.tried[0]
    assert "float32 precision and cast back" in result.en and "按 float32 精度算出再转换回来" in result.zh


def test_lab01_4_turning_on_requires_grad_of_the_example_inputs_is_named():
    def roundtrip(model, example_inputs):
        return _saved(torch.jit.trace(model, tuple(e.requires_grad_() for e in example_inputs)))

    result = expect_wrong("lab01.4", roundtrip)
    assert "changed the example inputs" in result.en and "改动了传给它的示例输入" in result.zh
    assert "requires_grad" in result.got[0]


def test_lab01_4_scaling_the_example_inputs_in_place_is_named():
    def roundtrip(model, example_inputs):
        for e in example_inputs:
            e.mul_(1.0001)
        return _saved(torch.jit.trace(model, example_inputs))

    result = expect_wrong("lab01.4", roundtrip)
    assert "changed the example inputs" in result.en and "values" in result.got[0]


# -- third fix round (att2-l00) ---------------------------------------------------------------------
def test_lab01_1_fusing_addmm_first_is_named():
    result = expect_wrong("lab01.1", _counted_after("fuse_addmm"))
    assert "torch.mm(x, w) + b" in str(result.tried[0])
    assert "fused or split up" in result.en and "统计之前计算图被清理过" in result.zh and "融合、拆分" in result.zh


def test_lab01_1_decomposing_ops_first_is_named():
    result = expect_wrong("lab01.1", _counted_after("decompose_ops"))
    assert "torch.addmm(b, x, w)" in str(result.tried[0])
    assert "fused or split up" in result.en and "融合、拆分" in result.zh


def test_lab01_2_swallowing_errors_of_the_check_run_is_named():
    def trace_safely(model, inputs):
        traced = torch.jit.trace(model, inputs[0], check_trace=False)
        try:
            torch.jit.trace(model, inputs[0], check_inputs=inputs)
        except Exception:
            return None
        return traced

    result = expect_wrong("lab01.2", trace_safely)
    assert "cannot run on inputs[1]" in result.en and "无法在 inputs[1] 上运行" in result.zh
    assert "must reach the caller" in result.en and "必须传给调用方" in result.zh


def test_lab01_4_turning_off_the_parameters_requires_grad_is_named():
    def roundtrip(model, example_inputs):
        model.requires_grad_(False)
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)

    result = expect_wrong("lab01.4", roundtrip)
    assert "requires_grad flag of the model's parameters" in result.en and "模型参数的 requires_grad 标志" in result.zh


def test_lab01_4_leaving_grad_mode_off_is_named():
    def roundtrip(model, example_inputs):
        torch.set_grad_enabled(False)
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)

    try:
        result = expect_wrong("lab01.4", roundtrip)
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()
    assert "gradient tracking off for the whole process" in result.en and "整个进程的梯度记录关掉了" in result.zh


def test_lab01_4_grad_mode_off_inside_a_with_block_passes():
    def roundtrip(model, example_inputs):
        buffer = io.BytesIO()
        with torch.no_grad():
            torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)

    expect_passed("lab01.4", roundtrip)
