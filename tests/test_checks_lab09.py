"""Lab 09 checkers: reference answers pass, stubs are "not yet implemented", and the
common mistakes get their specific messages."""
from __future__ import annotations


import collections
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint

RIGHT = {"linear_relu": 2, "sin_cos": 1, "affine_sum": 0, "tanh_times_x": 2}


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def _returning(value):
    return lambda: value


def text_of(result):
    """What a wrong result shows besides its headline, in both languages."""
    return " ".join(str(part) for v in (result.tried, result.expected, result.got)
                    for part in (v if isinstance(v, tuple) else (v, getattr(v, "zh", ""))))


# -- lab09.1: predict what the forward saves ---------------------------------------------------

def test_predict_reference_passes():
    expect_passed("lab09.1", solution("lab09", "make_predictions"))


def test_predict_stub_is_not_implemented():
    assert check("lab09.1", _stub).status == "not_implemented"


def test_predict_default_partitioner_counts_are_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": 2, "tanh_times_x": 3}))
    assert "default partitioner" in result.en and "默认划分器" in result.zh
    assert result.en.startswith("sin_cos, tanh_times_x:")


def test_predict_one_default_count_is_named_for_that_function():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": 2}))
    assert result.en.startswith("sin_cos: these counts are what AOTAutograd's default partitioner saves")


def test_predict_affine_sum_saving_x_is_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "affine_sum": 1}))
    assert "constant 2" in result.en and "常数 2" in result.zh


def test_predict_linear_relu_without_w_is_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "linear_relu": 1}))
    assert "needs w" in result.en and "需要 w" in result.zh
    assert "2" not in result.en + result.zh + text_of(result)


def test_predict_float_counts_are_wrong():
    result = expect_wrong("lab09.1", _returning({k: float(v) for k, v in RIGHT.items()}))
    assert "an int (not a bool or a float)" in result.en and "不能是 bool 或 float" in result.zh
    assert "2.0 (float)" in result.got


@pytest.mark.parametrize("counts", [
    collections.OrderedDict(RIGHT),
    collections.Counter(RIGHT),
    {k: np.int64(v) for k, v in RIGHT.items()},
    {k: torch.tensor(v) for k, v in RIGHT.items()},
], ids=["OrderedDict", "Counter", "numpy-int64", "int-tensor"])
def test_predict_any_mapping_of_integer_counts_passes(counts):
    expect_passed("lab09.1", _returning(counts))


@pytest.mark.parametrize("count", [True, torch.tensor(True), np.float64(1.0), "1"],
                         ids=["bool", "bool-tensor", "numpy-float", "str"])
def test_predict_a_count_that_is_not_an_int_is_named_even_when_it_equals_the_answer(count):
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": count}))   # RIGHT["sin_cos"] == 1 == True
    assert result.en.startswith("sin_cos: each count must be") and "sin_cos：每个计数" in result.zh


def test_predict_feedback_names_the_wrong_functions_without_their_counts():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": 3, "tanh_times_x": 4}))
    shown = text_of(result)
    assert "sin_cos, tanh_times_x" in result.got[0] and "sin_cos、tanh_times_x" in result.got[1]
    assert "linear_relu" not in shown and "affine_sum" not in shown
    assert not re.search(r"\d", shown), shown   # neither the expected counts nor any other number


def test_predict_the_saved_names_instead_of_a_count_are_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": ["primals_1"]}))
    assert "saved tensors themselves" in result.en and "保存的张量本身" in result.zh


def test_predict_counting_the_result_too_is_named():
    result = expect_wrong("lab09.1", _returning({k: v + 1 for k, v in RIGHT.items()}))
    assert "not saved for the backward" in result.en and "tangents_1" in result.zh


def test_predict_w_requiring_grad_is_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "linear_relu": 3}))
    assert "when w requires grad too" in result.en and "w 也要求梯度" in result.zh


def test_predict_the_functions_as_keys_are_named():
    def sin_cos(x):
        return torch.sin(x).cos()

    def linear_relu(x, w):
        return (x @ w).relu()

    def affine_sum(x):
        return (x * 2 + 1).sum()

    def tanh_times_x(x):
        return torch.tanh(x) * x
    result = expect_wrong("lab09.1", _returning({linear_relu: 2, sin_cos: 1, affine_sum: 0, tanh_times_x: 2}))
    assert "not the functions themselves" in result.en and "函数对象本身" in result.zh


def test_predict_missing_key_is_wrong():
    result = expect_wrong("lab09.1", _returning({k: v for k, v in RIGHT.items() if k != "sin_cos"}))
    assert "keys" in result.got


def test_predict_a_list_is_wrong():
    result = expect_wrong("lab09.1", _returning(list(RIGHT.values())))
    assert "dict" in result.en and "dict" in result.zh


# -- lab09.2: one kernel ------------------------------------------------------------------------

def test_fused_reference_passes():
    expect_passed("lab09.2", solution("lab09", "normalise_fused"))


def test_fused_written_another_way_passes():
    expect_passed("lab09.2", lambda x: (x / torch.max(torch.abs(x))).clamp(min=0))


def test_fused_stub_is_not_implemented():
    assert check("lab09.2", _stub).status == "not_implemented"


def test_fused_keeping_item_is_two_graphs():
    def keeps_item(x):
        peak = x.abs().max().item()
        return torch.relu(x / peak)
    result = expect_wrong("lab09.2", keeps_item)
    assert "2 graphs" in result.en and "2 张计算图" in result.zh


def test_fused_largest_value_not_magnitude_is_named():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.amax()))
    assert "largest value, not the largest magnitude" in result.en and "最大的绝对值" in result.zh


def test_fused_per_row_peak_is_named():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.abs().amax(-1, keepdim=True)))
    assert "each row" in result.en and "每一行" in result.zh


def test_fused_right_answers_written_other_ways_pass():
    for answer in (lambda x: F.relu(x / torch.linalg.vector_norm(x, ord=float("inf"))),
                   lambda x: torch.relu(x / torch.maximum(x.max(), -x.min())),
                   lambda x: torch.where(x > 0, x, 0.0) / x.abs().max(),
                   lambda x: torch.relu(x / x.detach().abs().amax())):
        expect_passed("lab09.2", answer)


@pytest.mark.parametrize("answer", [
    lambda x: torch.relu(x / (x.abs().amax() + 1e-12)),
    lambda x: torch.relu(x / x.abs().amax().clamp_min(1e-12)),
    lambda x: F.normalize(x.flatten(), p=float("inf"), dim=0).view_as(x).relu(),
], ids=["epsilon", "floor", "F.normalize"])
def test_fused_an_epsilon_is_caught_on_tiny_values(answer):
    result = expect_wrong("lab09.2", answer)
    assert "guards the division" in result.en and "加了保护" in result.zh
    assert "tiny values" in result.tried[0] and "数值极小" in result.tried[1]


def test_fused_a_special_case_for_zero_is_caught_on_zeros():
    peak = lambda x: x.abs().amax()  # noqa: E731
    result = expect_wrong("lab09.2", lambda x: torch.where(peak(x) == 0, torch.zeros_like(x), torch.relu(x / peak(x))))
    assert "guards the division" in result.en and "0 / 0" in result.zh and "zeros only" in result.tried[0]


def test_fused_the_reciprocal_is_caught_on_tiny_values():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x * (1 / x.abs().amax())))
    assert "reciprocal" in result.en and "倒数" in result.zh and "got inf" in result.got


def test_fused_a_peak_through_squares_is_caught_on_huge_values():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / (x * x).amax().sqrt()))
    assert "through squares" in result.en and "平方" in result.zh and "huge values" in result.tried[0]


def test_fused_a_view_of_a_non_contiguous_input_is_caught():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.view(-1).abs().max()))
    assert "raised an error" in result.en and "步长" in result.zh and "not contiguous" in result.tried[0]
    assert "view size is not compatible" in result.got


def test_fused_writing_into_the_input_is_named():
    result = expect_wrong("lab09.2", lambda x: x.div_(x.abs().amax()).relu_())
    assert "changed its input in place" in result.en and "原地修改了输入" in result.zh


def test_fused_a_float32_result_for_float64_is_named():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x.float() / x.float().abs().amax()))
    assert "dtype is not the input's" in result.en and "dtype 与输入不同" in result.zh and "float64" in result.tried[0]


def test_fused_the_matrix_inf_norm_is_named():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / torch.linalg.norm(x, float("inf"))))
    assert "largest row sum" in result.en and "各行绝对值之和" in result.zh


def test_fused_per_column_peak_is_named():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.abs().amax(0)))
    assert "each row (or column)" in result.en and "每一列" in result.zh


def test_fused_sort_fallback_is_named():
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.abs().flatten().sort().values[-1]))
    assert "eager ATen" in result.en and "aten.sort" in result.en and "融合的边界" in result.zh


# -- lab09.3: decompose silu --------------------------------------------------------------------

def _silu(x):
    return x * torch.sigmoid(x)


def _silu_backward(grad_output, self):
    s = torch.sigmoid(self)
    return grad_output * s * (1 + self * (1 - s))


def test_decompose_reference_passes():
    expect_passed("lab09.3", solution("lab09", "make_silu_decompositions"))


def test_decompose_written_another_way_passes():
    def forward(x):
        return x / (1 + torch.exp(-x))

    def backward(grad_output, self):
        s = torch.sigmoid(self)
        return grad_output * (s + self * s * (1 - s))
    expect_passed("lab09.3", _returning({torch.ops.aten.silu.default: forward,
                                         torch.ops.aten.silu_backward.default: backward}))


def test_decompose_library_tables_pass():
    from torch._decomp import core_aten_decompositions, get_decompositions
    aten = torch.ops.aten
    expect_passed("lab09.3", lambda: get_decompositions([aten.silu, aten.silu_backward]))
    expect_passed("lab09.3", core_aten_decompositions)


def test_decompose_registered_with_register_decomposition_passes():
    from torch._decomp import register_decomposition

    def make_table():
        table = {}
        register_decomposition(torch.ops.aten.silu, table)(_silu)            # a packet: every overload
        register_decomposition(torch.ops.aten.silu_backward, table)(_silu_backward)
        return table
    expect_passed("lab09.3", make_table)


def test_decompose_an_extra_packet_key_beside_the_overloads_passes():
    expect_passed("lab09.3", _returning({torch.ops.aten.silu: _silu, torch.ops.aten.silu.default: _silu,
                                         torch.ops.aten.silu_backward.default: _silu_backward}))


def test_decompose_with_tanh_passes():
    expect_passed("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: x * 0.5 * (1 + torch.tanh(x / 2)),
                                         torch.ops.aten.silu_backward.default: _silu_backward}))


def test_decompose_a_forward_that_overflows_is_named():
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: lambda x: x * torch.exp(x) / (1 + torch.exp(x)),
        torch.ops.aten.silu_backward.default: _silu_backward}))
    assert result.en.startswith("values become NaN or inf") and "溢出" in result.zh and "got nan" in result.got


def test_decompose_a_backward_that_overflows_is_named():
    def quotient_rule(grad_output, self):
        e = torch.exp(-self)
        return grad_output * (1 + e + self * e) / (1 + e) ** 2
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: _silu,
                                                 torch.ops.aten.silu_backward.default: quotient_rule}))
    assert result.en.startswith("gradients become NaN or inf") and "inf / inf" in result.zh


def test_decompose_ignoring_grad_output_is_named():
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: _silu,
        torch.ops.aten.silu_backward.default: lambda grad_output, self: _silu_backward(1, self)}))
    assert "ignores grad_output" in result.en and "忽略了 grad_output" in result.zh


def test_decompose_swapped_backward_arguments_are_named():
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: _silu,
        torch.ops.aten.silu_backward.default: lambda self, grad_output: _silu_backward(grad_output, self)}))
    assert "other order" in result.en and "参数顺序弄反" in result.zh


def test_decompose_an_entry_calling_its_own_op_is_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: F.silu,
                                                 torch.ops.aten.silu_backward.default: _silu_backward}))
    assert "calls the op it decomposes" in result.en and "又调用" in result.zh and "RecursionError" in result.got


def test_decompose_an_entry_writing_in_place_is_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: x * torch.sigmoid_(x.clone()),
                                                 torch.ops.aten.silu_backward.default: _silu_backward}))
    assert "writes in place" in result.en and "原地写入" in result.zh


@pytest.mark.parametrize("key, shown", [("aten::silu", "aten::silu"), (F.silu, "silu")], ids=["string", "function"])
def test_decompose_a_key_that_is_not_an_overload_is_named(key, shown):
    result = expect_wrong("lab09.3", _returning({key: _silu, torch.ops.aten.silu_backward.default: _silu_backward}))
    assert f"not an op overload ({shown})" in result.en and "不是算子重载" in result.zh


def test_decompose_another_overload_of_silu_backward_is_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: _silu,
                                                 torch.ops.aten.silu_backward.grad_input: _silu_backward}))
    assert "another overload of the op (aten.silu_backward.grad_input)" in result.en and "另一个重载" in result.zh


def test_decompose_a_forward_that_changes_the_dtype_is_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: _silu(x.float()),
                                                 torch.ops.aten.silu_backward.default: _silu_backward}))
    assert "another dtype" in result.en and "dtype 与输入不同" in result.zh and "float64" in result.tried[0]


def test_decompose_stub_is_not_implemented():
    assert check("lab09.3", _stub).status == "not_implemented"


def test_decompose_packet_keys_are_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu: _silu,
                                                 torch.ops.aten.silu_backward: _silu_backward}))
    assert "op packet (aten.silu)" in result.en and "算子包" in result.zh


def test_decompose_forward_only_is_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: _silu}))
    assert "aten.silu_backward" in result.en and "单独的条目" in result.zh


def test_decompose_backward_only_leaves_the_forward_op():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu_backward.default: _silu_backward}))
    assert "forward graph still calls aten.silu" in result.en and "前向图仍在调用" in result.zh


def test_decompose_wrong_derivative_is_named():
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: _silu,
        torch.ops.aten.silu_backward.default: lambda g, x: g * torch.sigmoid(x)}))
    assert "gradients do not" in result.en and "梯度不一致" in result.zh


def test_decompose_wrong_forward_is_named():
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: lambda x: x * torch.sigmoid(-x),
        torch.ops.aten.silu_backward.default: _silu_backward}))
    assert "values differ" in result.en and "数值与 eager" in result.zh


def test_hints_are_ladders_without_code():
    for task_id in ("lab09.1", "lab09.2", "lab09.3"):
        first, second = hint(task_id, 1), hint(task_id, 2)
        assert first.en != second.en and "ecture 09, section" in second.en and "第 09 讲" in second.zh
        for text in (first.en, second.en):
            assert "return " not in text and "amax" not in text and "x * torch.sigmoid" not in text


# -- one language at a time ----------------------------------------------------------------------



@pytest.mark.parametrize("task_id, answer", [
    ("lab09.1", _returning({**RIGHT, "sin_cos": 2, "tanh_times_x": 3})),
    ("lab09.2", lambda x: torch.relu(x / x.amax())),
    ("lab09.2", lambda x: torch.relu(x / (x.abs().amax() + 1e-12))),
    ("lab09.3", _returning({torch.ops.aten.silu.default: _silu})),
    ("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: x * torch.exp(x) / (1 + torch.exp(x)),
                            torch.ops.aten.silu_backward.default: _silu_backward})),
], ids=["lab09.1", "lab09.2", "lab09.2-tiny", "lab09.3", "lab09.3-overflow"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)
