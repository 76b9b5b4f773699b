"""Lab 09 checkers: reference answers pass, stubs are "not yet implemented", and the
common mistakes get their specific messages."""
from __future__ import annotations


import pytest
import torch

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint

RIGHT = {"linear_relu": 2, "sin_cos": 1, "affine_sum": 0, "tanh_times_x": 2}


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def _returning(value):
    return lambda: value


# -- lab09.1: predict what the forward saves ---------------------------------------------------

def test_predict_reference_passes():
    expect_passed("lab09.1", solution("lab09", "make_predictions"))


def test_predict_stub_is_not_implemented():
    assert check("lab09.1", _stub).status == "not_implemented"


def test_predict_default_partitioner_counts_are_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": 2, "tanh_times_x": 3}))
    assert "default partitioner" in result.en and "默认划分器" in result.zh


def test_predict_affine_sum_saving_x_is_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "affine_sum": 1}))
    assert "constant 2" in result.en and "常数 2" in result.zh


def test_predict_linear_relu_without_w_is_named():
    result = expect_wrong("lab09.1", _returning({**RIGHT, "linear_relu": 1}))
    assert "needs w" in result.en and "需要 w" in result.zh


def test_predict_float_counts_are_wrong():
    result = expect_wrong("lab09.1", _returning({k: float(v) for k, v in RIGHT.items()}))
    assert "expected an int" in result.got


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


def test_decompose_stub_is_not_implemented():
    assert check("lab09.3", _stub).status == "not_implemented"


def test_decompose_packet_keys_are_named():
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu: _silu,
                                                 torch.ops.aten.silu_backward: _silu_backward}))
    assert "op packet" in result.en and "算子包" in result.zh


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
    ("lab09.3", _returning({torch.ops.aten.silu.default: _silu})),
], ids=["lab09.1", "lab09.2", "lab09.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)
