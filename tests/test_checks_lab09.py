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
    assert "affine_sum: you count more than its backward needs" in result.en and "affine_sum：你数的比" in result.zh
    # the concept, not the answer: no number, no "constant" (which says the count)
    assert not re.search(r"\d|constant|常数", result.en + result.zh + text_of(result))


@pytest.mark.parametrize("count", [0, 1])
def test_predict_linear_relu_too_few_is_named_without_the_answer(count):
    result = expect_wrong("lab09.1", _returning({**RIGHT, "linear_relu": count}))
    assert "linear_relu: you count fewer than its backward needs" in result.en and "linear_relu：你数的比" in result.zh
    # what to ask of each op, not the list of what it saves (w, where relu's input was positive) nor its length
    shown = result.en + result.zh + text_of(result)
    assert not re.search(r"\d|\bw\b|positive|two|为正|两", shown), shown


def test_predict_float_counts_are_wrong():
    result = expect_wrong("lab09.1", _returning({k: float(v) for k, v in RIGHT.items()}))
    assert "an int (not a bool, a float or a tensor)" in result.en and "不能是 bool、float 或张量" in result.zh
    assert "2.0 (float)" in result.got


@pytest.mark.parametrize("counts", [
    collections.OrderedDict(RIGHT),
    collections.Counter(RIGHT),
    {k: np.int64(v) for k, v in RIGHT.items()},
], ids=["OrderedDict", "Counter", "numpy-int64"])
def test_predict_any_mapping_of_integer_counts_passes(counts):
    expect_passed("lab09.1", _returning(counts))


@pytest.mark.parametrize("count", [True, torch.tensor(True), np.float64(1.0), "1", torch.tensor(1), torch.tensor([1])],
                         ids=["bool", "bool-tensor", "numpy-float", "str", "0-d-int-tensor", "1-element-int-tensor"])
def test_predict_a_count_that_is_not_an_int_is_named_even_when_it_equals_the_answer(count):
    result = expect_wrong("lab09.1", _returning({**RIGHT, "sin_cos": count}))   # RIGHT["sin_cos"] == 1 == True
    assert result.en.startswith("sin_cos: each count must be") and "sin_cos：每个计数" in result.zh


def test_predict_a_tensor_count_is_not_an_int():
    # the attacker's answer: right counts, one of them a one-element tensor
    result = expect_wrong("lab09.1", _returning({"linear_relu": torch.tensor([2]), "sin_cos": 1, "affine_sum": 0,
                                                 "tanh_times_x": 2}))
    assert result.en.startswith("linear_relu: each count must be") and "or a tensor" in result.en
    assert "float 或张量" in result.zh and "Tensor" in result.got


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
    result = expect_wrong("lab09.2", lambda x: torch.relu(x * (1.0 / x.abs().amax())))
    assert "reciprocal" in result.en and "倒数" in result.zh and "got inf" in result.got
    # the difference is an infinity, not "max abs difference 0" (differs' maximum is over finite values only)
    assert "an infinity where a finite number was expected" in result.got and "无穷大" in result.got.zh
    assert "difference 0" not in result.got and "误差 0" not in result.got.zh


@pytest.mark.parametrize("answer", [
    lambda x: torch.relu(x) / x.abs().amax(),
    lambda x: x.clamp(min=0) / x.abs().amax(),
    lambda x: torch.where(x > 0, x, 0.0) / x.abs().max(),
    lambda x: torch.where(x >= 0, x / x.abs().amax(), torch.zeros_like(x)),
], ids=["relu", "clamp", "where", "where-selects-0"])
def test_fused_relu_before_dividing_is_caught_on_minus_inf(answer):
    # x = [-inf, 1, -2]: normalise gives [nan, 0, -0], relu first (or a where that selects 0) gives [0, 0, 0]
    result = expect_wrong("lab09.2", answer)
    assert "sets negative values to 0 without dividing them" in result.en and "没有做除法就把负值设成了 0" in result.zh
    assert "-inf" in result.tried[0]


@pytest.mark.parametrize("answer", [
    lambda x: (x + x.abs()) / (2 * x.abs().amax()),
    lambda x: torch.relu(2 * x / (2 * x.abs().amax())),
    lambda x: (x + x.abs()) / 2 / x.abs().amax(),
], ids=["relu-as-abs-identity", "twice", "sum-halved"])
def test_fused_an_intermediate_that_overflows_near_the_largest_number_is_named(answer):
    # float32 [3e38, -1, 1e38]: x + |x| = inf at 3e38 and 2 * peak = inf, where x / peak is finite
    result = expect_wrong("lab09.2", answer)
    assert "overflows on values near the largest number" in result.en and "最大数时溢出" in result.zh
    assert "largest number" in result.tried[0] and "最大数" in result.tried[1]


@pytest.mark.parametrize("answer", [
    lambda x: (lambda y: torch.where(y > 0, y, torch.zeros_like(y)))(x / x.abs().amax()),
    lambda x: torch.nan_to_num(torch.relu(x / x.abs().amax())),
    lambda x: torch.fmax(x / x.abs().amax(), torch.zeros((), dtype=x.dtype)),
], ids=["where-as-relu", "nan_to_num-after", "fmax-drops-nan"])
def test_fused_replacing_the_nan_of_zero_by_zero_is_named(answer):
    # all-zero x: normalise gives NaN everywhere (0 / 0); where(y > 0, y, 0) is False for NaN and gives 0
    result = expect_wrong("lab09.2", answer)
    assert "replaces the NaN afterwards" in result.en and "事后替换了 NaN" in result.zh and "zeros only" in result.tried[0]


def test_fused_the_third_round_right_answers_pass():
    def peak_under_no_grad(x):
        with torch.no_grad():
            peak = x.abs().amax()
        return torch.relu(x / peak)
    expect_passed("lab09.2", peak_under_no_grad)
    expect_passed("lab09.2", lambda x: torch.relu(x.double() / x.double().abs().amax()).to(x.dtype))


@pytest.mark.parametrize("answer", [
    lambda x: torch.relu(x / x.abs().nan_to_num(0.0).amax()),
    lambda x: torch.relu(x / x.abs().nan_to_num(0.0, posinf=0.0).amax()),
    lambda x: torch.relu(x / torch.where(x.isnan(), 0.0, x.abs()).amax()),
], ids=["nan_to_num", "nan_to_num-no-inf", "where-nan"])
def test_fused_skipping_nan_or_inf_is_named(answer):
    # x = [nan, 1, -2]: normalise gives [nan, nan, nan]
    result = expect_wrong("lab09.2", answer)
    assert "skips or replaces NaN or inf" in result.en and "跳过或替换了 x 中的 NaN" in result.zh


@pytest.mark.parametrize("answer", [
    lambda x: torch.relu(x / x.abs().amax().float()),
    lambda x: torch.relu(x.float() / x.float().abs().amax()).to(x.dtype),
], ids=["peak", "cast-back"])
def test_fused_going_through_float32_on_float64_is_named(answer):
    # float64 [1e300, 5e299] gives [0, 0] through float32, [1, 0.5] in float64; ordinary float64 loses digits
    result = expect_wrong("lab09.2", answer)
    assert "lower precision than x's dtype" in result.en and "经过了 float32" in result.zh
    assert "float64" in result.tried[0]
    assert re.search(r"got 0\.\d{12,}, expected 0\.\d{12,}", result.got)   # all the digits, not 4 that agree


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_a_half_precision_peak_is_named(dtype):
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.abs().amax().to(dtype)))
    assert "lower precision than x's dtype" in result.en and "更低的精度" in result.zh


def test_fused_a_cache_keyed_by_shape_is_named():
    cache = {}

    def cached_peak(x):
        key = (tuple(x.shape), x.dtype)
        if key not in cache:
            cache[key] = x.abs().amax().detach().clone()
        return torch.relu(x / cache[key])
    result = expect_wrong("lab09.2", cached_peak)
    assert "computed from an earlier call" in result.en and "按形状缓存" in result.zh
    assert "same shape and dtype" in result.tried[0]


def test_fused_detaching_x_is_named():
    def detached(x):
        x = x.detach()
        return torch.relu(x / x.abs().amax())
    result = expect_wrong("lab09.2", detached)
    assert "does not require grad" in result.en and "不要求梯度" in result.zh and "requires grad" in result.tried[0]


@pytest.mark.parametrize("answer", [
    lambda x: torch.relu(x / torch.maximum(x.amax(), -x.amin())),
    lambda x: torch.relu(x / torch.linalg.vector_norm(x, float("inf"))),
    lambda x: torch.relu(x / x.abs().amax(dim=tuple(range(x.dim())), keepdim=True)),
    lambda x: torch.clamp(x / x.abs().amax(), 0, 1),
    lambda x: (x / x.abs().amax()).relu_(),
    lambda x: -torch.minimum(-x / x.abs().amax(), torch.zeros((), dtype=x.dtype)),
], ids=["maximum", "vector_norm", "amax-all-dims", "clamp", "relu_", "minimum"])
def test_fused_the_attackers_right_answers_pass(answer):
    expect_passed("lab09.2", answer)


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
    assert "each row (or column" in result.en and "每一列" in result.zh


def test_fused_a_peak_over_some_dimensions_is_named():
    # on the (3, 4, 7) probe: one peak per position of the last dimension
    result = expect_wrong("lab09.2", lambda x: torch.relu(x / x.abs().amax(dim=0).amax(dim=0)))
    assert "some dimensions but not all" in result.en and "部分维度" in result.zh and "(3, 4, 7)" in result.tried[0]


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


def _through_float32(fn):
    """``fn`` computed in float32 and cast back to its input's dtype."""
    return lambda *args: fn(*(a.float() for a in args)).to(args[-1].dtype)


@pytest.mark.parametrize("table, which", [
    ({torch.ops.aten.silu.default: _through_float32(_silu),
      torch.ops.aten.silu_backward.default: _through_float32(_silu_backward)}, "silu"),
    ({torch.ops.aten.silu.default: _silu,
      torch.ops.aten.silu_backward.default: _through_float32(_silu_backward)}, "silu_backward"),
    ({torch.ops.aten.silu.default: _silu,
      torch.ops.aten.silu_backward.default: lambda g, x: _silu_backward(g.float(), x.float())}, "silu_backward"),
], ids=["both", "backward", "backward-not-cast-back"])
def test_decompose_float32_inside_cast_back_is_named(table, which):
    # float64 [1/3, 1e300, -0.7]: eager 0.19419006882077156, 1e300, …; through float32 0.19419007003…, inf, …
    result = expect_wrong("lab09.3", _returning(table))
    assert f"your {which} entry loses precision" in result.en and f"你的 {which} 条目丢掉了精度" in result.zh
    assert "float64" in result.tried[0]


def test_decompose_float16_inside_is_named_on_float32():
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: lambda x: _silu(x.half()).to(x.dtype),
        torch.ops.aten.silu_backward.default: _silu_backward}))
    assert "your silu entry loses precision" in result.en and "丢掉了精度" in result.zh


@pytest.mark.parametrize("table", [
    {torch.ops.aten.silu.default: lambda x: _silu(x.clamp(-50, 50)),
     torch.ops.aten.silu_backward.default: _silu_backward},
    {torch.ops.aten.silu.default: _silu,
     torch.ops.aten.silu_backward.default: lambda g, x: torch.where(x.abs() > 50, 0.0, _silu_backward(g, x))},
], ids=["clamped-forward", "where-backward"])
def test_decompose_a_cutoff_for_large_inputs_is_named(table):
    # x = 100: eager silu(100) = 100, clamped 50; eager gradient there 1, cut off 0
    result = expect_wrong("lab09.3", _returning(table))
    assert "only for inputs of large magnitude" in result.en and "截断" in result.zh and "-100 to 100" in result.tried[0]


@pytest.mark.parametrize("forward", [
    lambda x: torch.where(x > 10, x, x * torch.sigmoid(x)),
    lambda x: torch.where(x > 20, x, x * torch.sigmoid(x)),
    lambda x: torch.where(x > 20, x, x / (1 + torch.exp(-x))),
], ids=["at-10", "at-20", "at-20-exp"])
def test_decompose_a_forward_cutoff_above_is_named(forward):
    # float64 x = 11: eager silu 10.999816284359673, cut off 11; x = 21: 20.99999998407662, cut off 21
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: forward,
                                                 torch.ops.aten.silu_backward.default: _silu_backward}))
    assert result.en.startswith("values differ from eager silu only for inputs of large magnitude")
    assert "(x itself, 0 or one constant)" in result.en and "截断" in result.zh and "x 本身" in result.zh
    assert "±5.5 to ±40" in result.tried[0] and "±5.5 到 ±40" in result.tried[1]


def _expanded(g, x):
    s = torch.sigmoid(x)
    return g * (s + x * s - x * s * s)


def _through_silu_value(g, x):
    s = torch.sigmoid(x)
    return g * s * (1 + x - x * s)


def _through_y(g, x):
    s = torch.sigmoid(x)
    y = x * s
    return g * (s + y - y * s)


@pytest.mark.parametrize("backward", [_expanded, _through_silu_value, _through_y],
                         ids=["expanded", "s-times-1-plus-x-minus-xs", "through-y"])
def test_decompose_a_backward_that_cancels_large_terms_is_named_not_as_a_cutoff(backward):
    # float64 x = 1e300: s = 1, s + x*s - x*s*s = (1 + 1e300) - 1e300 = 0 where eager gives 1
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: _silu,
                                                 torch.ops.aten.silu_backward.default: backward}))
    assert result.en.startswith("gradients differ from eager silu only for inputs of huge magnitude")
    assert "subtracts nearly equal large numbers" in result.en and "相互抵消" in result.zh
    assert "cutoff" not in result.en and "截断" not in result.zh


@pytest.mark.parametrize("backward", [
    lambda g, x: g * torch.sigmoid(x) * (1 + x * torch.sigmoid(-x)),
    lambda g, x: g * torch.sigmoid(x) + torch.ops.aten.sigmoid_backward(g * x, torch.sigmoid(x)),
    lambda g, x: g * (torch.sigmoid(x) + F.silu(x) * (1 - torch.sigmoid(x))),
], ids=["sigmoid-of-minus-x", "aten.sigmoid_backward", "F.silu-inside"])
def test_decompose_the_third_round_right_backwards_pass(backward):
    expect_passed("lab09.3", _returning({torch.ops.aten.silu.default: _silu,
                                         torch.ops.aten.silu_backward.default: backward}))


def test_decompose_an_explicit_sigmoid_passes():
    def sigmoid(x):
        return 1 / (1 + torch.exp(-x))

    def backward(grad_output, self):
        s = sigmoid(self)
        return grad_output * s * (1 + self * (1 - s))
    expect_passed("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: x * sigmoid(x),
                                         torch.ops.aten.silu_backward.default: backward}))


def test_decompose_a_forward_that_gives_nan_at_inf_is_named():
    # x = inf: x - x * sigmoid(-x) = inf - inf * 0 = NaN where eager silu gives inf
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: x - x * torch.sigmoid(-x),
                                                 torch.ops.aten.silu_backward.default: _silu_backward}))
    assert result.en.startswith("values are NaN where eager silu gives inf") and "无穷大相互运算" in result.zh


def test_decompose_masking_nan_and_inf_is_named():
    # x = [nan, inf, 1]: eager values [nan, inf, 0.731], gradients [nan, nan, 0.928]
    result = expect_wrong("lab09.3", _returning({
        torch.ops.aten.silu.default: lambda x: torch.nan_to_num(_silu(x)),
        torch.ops.aten.silu_backward.default: lambda g, x: torch.nan_to_num(_silu_backward(g, x))}))
    assert "masks non-finite values" in result.en and "遮掉了" in result.zh and "NaN" in result.tried[0]


def test_decompose_a_clamped_backward_is_caught_on_inf():
    def clamped(grad_output, self):
        return _silu_backward(grad_output, self.clamp(-30, 30))
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: _silu,
                                                 torch.ops.aten.silu_backward.default: clamped}))
    assert result.en.startswith("gradients are finite numbers where eager silu gives NaN or inf")
    assert "梯度却是有限的数" in result.zh


def test_decompose_sigmoid_kept_from_the_forward_entry_is_named():
    saved = {}

    def forward(x):
        s = torch.sigmoid(x)
        saved["s"] = s
        return x * s

    def backward(grad_output, x):
        s = saved.get("s")
        if s is None or s.shape != x.shape:
            s = torch.sigmoid(x)
        return grad_output * s * (1 + x * (1 - s))
    # F.silu(x) + F.silu(2 * x): the first silu's backward reads the second's sigmoid
    result = expect_wrong("lab09.3", _returning({torch.ops.aten.silu.default: forward,
                                                 torch.ops.aten.silu_backward.default: backward}))
    assert "kept from the forward entry" in result.en and "全局变量或闭包" in result.zh
    assert "F.silu(x) + F.silu(2 * x)" in result.tried[0]


@pytest.mark.parametrize("sigmoid", [
    lambda x: torch.exp(F.logsigmoid(x)),
    lambda x: torch.exp(-F.softplus(-x)),
    lambda x: torch.exp(-torch.log1p(torch.exp(-x))),
    lambda x: 0.5 * (1 + torch.tanh(0.5 * x)),
], ids=["logsigmoid", "softplus", "log1p", "tanh"])
def test_decompose_sigmoid_written_other_ways_passes(sigmoid):
    def backward(grad_output, self):
        s = sigmoid(self)
        return torch.addcmul(grad_output * s, grad_output * s * self, 1 - s)
    expect_passed("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: x * sigmoid(x),
                                         torch.ops.aten.silu_backward.default: backward}))


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
    ("lab09.2", lambda x: torch.relu(x * (1.0 / x.abs().amax()))),
    ("lab09.2", lambda x: torch.relu(x.detach() / x.detach().abs().amax())),
    ("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: torch.nan_to_num(_silu(x)),
                            torch.ops.aten.silu_backward.default: lambda g, x: torch.nan_to_num(_silu_backward(g, x))})),
    ("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: _silu(x.float()).to(x.dtype),
                            torch.ops.aten.silu_backward.default: _silu_backward})),
    ("lab09.2", lambda x: (x + x.abs()) / (2 * x.abs().amax())),
    ("lab09.3", _returning({torch.ops.aten.silu.default: _silu, torch.ops.aten.silu_backward.default: _expanded})),
    ("lab09.3", _returning({torch.ops.aten.silu.default: lambda x: torch.where(x > 10, x, _silu(x)),
                            torch.ops.aten.silu_backward.default: _silu_backward})),
], ids=["lab09.1", "lab09.2", "lab09.2-tiny", "lab09.3", "lab09.3-overflow", "lab09.2-infinity", "lab09.2-detached",
        "lab09.3-masked", "lab09.3-precision", "lab09.2-near-max", "lab09.3-cancellation", "lab09.3-cutoff"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)


def test_fused_fmax_is_named_among_what_replaces_nan():
    # round 4: fmax(x / peak, 0) picks 0 over the NaN of 0 / 0; the message names fmax
    result = expect_wrong("lab09.2", lambda x: torch.fmax(x / x.abs().amax(), torch.zeros((), dtype=x.dtype)))
    assert "fmax or fmin" in result.en and "fmax 或 fmin" in result.zh


# -- feedback in 中文 has no English words (issue 28) ---------------------------------------------

_ENGLISH_WORDS = re.compile(r"\b(expected|items|list of|dict with|keys|tensor of|shape|line|in \w+,|got|result)\b")


@pytest.mark.parametrize("make", [
    lambda good: {k: [1, 2] for k in good},  # the tensors themselves, as a list
    lambda good: {k: v + 1 for k, v in good.items()},  # every count one too many
    lambda good: dict(good, extra=1),  # an extra key
    lambda good: {k: 2.5 for k in good},  # floats
    lambda good: [1, 2],  # not a dict
])
def test_lab09_1_feedback_in_chinese_has_no_english_words(monkeypatch, make):
    good = solution("lab09", "make_predictions")()
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    shown = check("lab09.1", lambda: make(good)).to_text()
    assert "还不正确" in shown
    prose = re.sub(r"predictions\[[^\]]*\]|'[^']*'|aot_graphs\([^)]*\)", "", shown)
    assert not _ENGLISH_WORDS.search(prose), shown


def test_lab09_1_an_exception_location_reads_in_chinese(monkeypatch):
    def make_predictions():
        return {}["linear_relu"]

    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    shown = check("lab09.1", make_predictions).to_text()
    assert "（位于 make_predictions，第 " in shown and " 行）" in shown and "(in make_predictions" not in shown, shown
