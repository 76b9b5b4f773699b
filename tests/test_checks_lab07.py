"""fxcourse.check for lab07: the reference answers from solutions/ pass, stubs are not implemented,
and each plausible wrong answer is rejected with its mistake named."""
from __future__ import annotations


import pytest
import torch

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint
from fxcourse.checks.lab07 import Router

TASKS = ["lab07.1", "lab07.2", "lab07.3", "lab07.4"]


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


class StubRouter(Router):
    def forward(self, x):
        raise NotImplementedError


@pytest.mark.parametrize("task_id, name", [
    ("lab07.1", "no_breaks"), ("lab07.2", "compile_once"), ("lab07.3", "fail_guard"), ("lab07.4", "CondRouter"),
])
def test_reference_answers_pass(task_id, name):
    expect_passed(task_id, solution("lab07", name))


@pytest.mark.parametrize("task_id, answer", [
    ("lab07.1", _stub), ("lab07.2", _stub), ("lab07.3", _stub), ("lab07.4", StubRouter),
])
def test_stub_is_not_implemented(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "not_implemented", result.to_text()


@pytest.mark.parametrize("task_id", TASKS)
def test_every_task_has_a_hint_ladder(task_id):
    steps = [hint(task_id, level=i) for i in (1, 2)]
    assert all(s.count >= 2 and s.en and s.zh for s in steps)
    assert "Lecture 07" in steps[1].en and "第 07 讲" in steps[1].zh


# -- lab07.1 -------------------------------------------------------------------------------

def test_lab07_1_other_right_answers_pass():
    def with_cond(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        return torch.cond(y.sum() > 0, lambda y, s: y / s, lambda y, s: -y, (y, scale)) + 1
    expect_passed("lab07.1", with_cond)


def test_lab07_1_nan_from_blending_both_branches():
    def blended(x):
        y = torch.sin(x) * 2
        take = (y.sum() > 0).to(y.dtype)
        return take * (y / y.abs().max()) + (1 - take) * (-y) + 1
    result = expect_wrong("lab07.1", blended)
    assert "NaN" in result.en and "0 / 0" in result.en and "NaN" in result.zh
    assert "zeros" in result.tried[0] and "全零" in result.tried[1]


def test_lab07_1_greater_or_equal_is_named():
    def at_least(x):
        y = torch.sin(x) * 2
        return torch.where(y.sum() >= 0, y / y.abs().max(), -y) + 1
    result = expect_wrong("lab07.1", at_least)
    assert "exactly 0" in result.en and "严格的 y.sum() > 0" in result.zh


def test_lab07_1_max_instead_of_abs_max_is_named():
    def plain_max(x):
        y = torch.sin(x) * 2
        return torch.where(y.sum() > 0, y / y.max(), -y) + 1
    result = expect_wrong("lab07.1", plain_max)
    assert "largest absolute value" in result.en and "绝对值的最大值" in result.zh


def test_lab07_1_item_hidden_by_fullgraph_is_caught_by_a_plain_compile():
    def keeps_item(x):
        y = torch.sin(x) * 2
        scale = y.abs().max().item()
        return torch.where(y.sum() > 0, y / scale, -y) + 1
    result = expect_wrong("lab07.1", keeps_item)
    assert "fullgraph=True passed" in result.en and "item()" in result.en and "item()" in result.zh
    assert "1 graph" in result.expected[0] and "1 张计算图" in result.expected[1]


def test_lab07_1_a_python_if_is_named():
    def keeps_if(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        if y.sum() > 0:
            return y / scale + 1
        return -y + 1
    result = expect_wrong("lab07.1", keeps_if)
    assert "Python `if`" in result.en and "Python `if`" in result.zh
    assert "torch.where(" not in result.en


def test_lab07_1_a_print_is_named_and_not_printed(capsys):
    reference = solution("lab07", "no_breaks")
    capsys.readouterr()  # what the solution notebook's cells print when this test runs first

    def keeps_print(x):
        print("scale")
        return reference(x)
    result = expect_wrong("lab07.1", keeps_print)
    assert "print" in result.en and "print" in result.zh
    assert capsys.readouterr().out == ""


# -- lab07.2 -------------------------------------------------------------------------------

def test_lab07_2_another_right_answer_passes():
    expect_passed("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend, dynamic=True))


def test_lab07_2_plain_compile_recompiles_once_and_says_why():
    result = expect_wrong("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend))
    assert "seen it change" in result.en and "看到某一维变化" in result.zh
    assert result.got == ("2 compiles", "编译 2 次")
    assert "mark_dynamic" not in result.en and "dynamic=True" not in result.en


def test_lab07_2_marking_the_wrong_dim_is_named():
    def wrong_dim(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.mark_dynamic(x, 1)
            return compiled(x)
        return run
    result = expect_wrong("lab07.2", wrong_dim)
    assert "marked dim 1" in result.en and "第 1 维" in result.zh


def test_lab07_2_ignoring_the_backend_is_named():
    result = expect_wrong("lab07.2", lambda fn, backend: torch.compile(fn, backend="eager", dynamic=True))
    assert "never ran" in result.en and "从未运行" in result.zh


def test_lab07_2_static_shapes_compile_every_time():
    result = expect_wrong("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend, dynamic=False))
    assert result.got == ("3 compiles", "编译 3 次") and "dynamic shapes are off" in result.en and "动态形状被关闭" in result.zh


# -- lab07.3 -------------------------------------------------------------------------------

def _fail(**overrides):
    reference = solution("lab07", "fail_guard")
    return lambda x, kind: overrides[kind](x) if kind in overrides else reference(x, kind)


def test_lab07_3_another_right_answer_passes():
    expect_passed("lab07.3", _fail(shape=lambda x: x[:-1].clone(), dtype=lambda x: x.half(),
                                   requires_grad=lambda x: x.detach().requires_grad_(True),
                                   stride=lambda x: torch.empty_strided(x.shape, (1, x.shape[0])).copy_(x)))


def test_lab07_3_transpose_is_a_shape_change_not_a_stride_change():
    result = expect_wrong("lab07.3", _fail(stride=lambda x: x.t()))
    assert "shape changed as well" in result.en and "形状也变了" in result.zh
    assert "stride" in result.expected[0] and "步长" in result.expected[1]


def test_lab07_3_two_changes_hidden_behind_the_first_reported_one():
    # Dynamo's reason says only "dtype mismatch": the shape change hides behind it
    result = expect_wrong("lab07.3", _fail(dtype=lambda x: torch.cat([x, x]).double()))
    assert "so did: shape" in result.en and "也变了：形状" in result.zh


def test_lab07_3_in_place_requires_grad_is_caught():
    result = expect_wrong("lab07.3", _fail(requires_grad=lambda x: x.requires_grad_()))
    assert "in place" in result.en and "原地修改" in result.zh


def test_lab07_3_an_unchanged_tensor_fails_no_guard():
    result = expect_wrong("lab07.3", _fail(dtype=lambda x: x.float()))
    assert "nothing would recompile" in result.en and "不会重新编译" in result.zh


def test_lab07_3_changing_the_wrong_property_is_named():
    result = expect_wrong("lab07.3", _fail(stride=lambda x: x.double()))
    assert "you changed the dtype, not the stride" in result.en and "你改变的是 dtype，而不是 stride" in result.zh


# -- lab07.4 -------------------------------------------------------------------------------

def test_lab07_4_a_python_if_cannot_be_exported():
    result = expect_wrong("lab07.4", Router)
    assert "cannot be exported" in result.en and "无法导出" in result.zh


def test_lab07_4_torch_where_exports_but_is_not_cond():
    class WhereRouter(Router):
        def forward(self, x):
            return torch.where(x.norm() > 2.0, torch.relu(self.large(x)), self.small(x) * 0.5)
    result = expect_wrong("lab07.4", WhereRouter)
    assert "no cond" in result.en and "没有 cond" in result.zh


def test_lab07_4_swapped_branches_are_named():
    class Swapped(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda x: self.small(x) * 0.5,
                              lambda x: torch.relu(self.large(x)), (x,))
    result = expect_wrong("lab07.4", Swapped)
    assert "other branch" in result.en and "另一个分支" in result.zh


def test_lab07_4_greater_or_equal_is_named():
    class AtLeast(Router):
        def forward(self, x):
            return torch.cond(x.norm() >= 2.0, lambda x: torch.relu(self.large(x)),
                              lambda x: self.small(x) * 0.5, (x,))
    result = expect_wrong("lab07.4", AtLeast)
    assert "exactly 2.0" in result.en and "恰好为 2.0" in result.zh


def test_checkers_leave_dynamo_config_and_logging_alone():
    import logging
    before = (torch._dynamo.config.capture_scalar_outputs, torch._dynamo.config.recompile_limit)
    artifacts = set(torch._logging._internal.log_state.artifact_names)
    level = logging.getLogger("torch._dynamo.guards.__recompiles").level
    check("lab07.1", solution("lab07", "no_breaks"))
    check("lab07.3", solution("lab07", "fail_guard"))
    assert (torch._dynamo.config.capture_scalar_outputs, torch._dynamo.config.recompile_limit) == before
    assert set(torch._logging._internal.log_state.artifact_names) == artifacts
    assert logging.getLogger("torch._dynamo.guards.__recompiles").level == level


def test_lab07_4_another_right_answer_passes():
    class LambdaRouter(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda t: torch.relu(self.large(t)),
                              lambda t: self.small(t) * 0.5, [x])
    expect_passed("lab07.4", LambdaRouter)


# -- found by an adversarial review: near-misses a learner writes ---------------------------------

def _no_breaks_variant(select):
    def answer(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        return select(y, scale) + 1
    return answer


def test_lab07_1_a_decision_per_element_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y > 0, y / s, -y)))
    assert "element by element" in result.en and "逐个元素" in result.zh


def test_lab07_1_a_decision_per_row_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(
        lambda y, s: torch.where(y.sum(-1, keepdim=True) > 0, y / s, -y)))
    assert "row by row" in result.en and "按行判断" in result.zh and "(3, 5)" in result.tried[0]


def test_lab07_1_swapped_branches_are_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y.sum() > 0, -y, y / s)))
    assert "other branch" in result.en and "另一个分支" in result.zh


def test_lab07_1_torch_cond_passes():
    expect_passed("lab07.1", _no_breaks_variant(
        lambda y, s: torch.cond(y.sum() > 0, lambda y, s: y / s, lambda y, s: -y, (y, s))))


def test_lab07_2_marking_the_batch_and_the_features_is_named():
    def both_dims(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.mark_dynamic(x, 0)
            torch._dynamo.mark_dynamic(x, 1)
            return compiled(x)
        return run
    result = expect_wrong("lab07.2", both_dims)
    assert "marked dim 1" in result.en and "第 1 维" in result.zh and "ConstraintViolation" in result.got


def _marked_with(**bounds):
    def compile_once(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.mark_dynamic(x, 0, **bounds)
            return compiled(x)
        return run
    return compile_once


def test_lab07_2_a_range_bounded_to_small_batches_is_named():
    # the lecture's sizes fit in [2, 16]; the checker's large batch does not
    result = expect_wrong("lab07.2", _marked_with(min=2, max=16))
    assert "gave the dynamic batch dimension a range" in result.en and "指定了范围" in result.zh
    assert "no upper bound" in result.expected[0] and "没有上限" in result.expected[1]


def test_lab07_2_a_range_that_covers_the_probes_is_still_named():
    result = expect_wrong("lab07.2", _marked_with(min=2, max=10**6))
    assert "gave the dynamic batch dimension a range" in result.en and "请不要限定范围" in result.zh
    assert "max=1000000" in result.got[0] and "第 0 维的范围：min=2，max=1000000" in result.got[1]
    assert "dim 0" not in result.got[1]


def test_lab07_2_open_ranges_written_differently_pass():
    def maybe(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.maybe_mark_dynamic(x, [0])
            return compiled(x)
        return run
    expect_passed("lab07.2", maybe)


def test_lab07_3_an_expanded_row_for_the_stride_is_named():
    # strides (0, 1): only the strides differ from x's, but the values are the first row repeated
    result = expect_wrong("lab07.3", _fail(stride=lambda x: x[:1].expand(x.shape)))
    assert "the values are no longer x's" in result.en and "取值已经不是 x 的了" in result.zh
    assert "expand" in result.en and "expand" in result.zh


def test_lab07_3_reinterpreted_strides_are_named():
    result = expect_wrong("lab07.3", _fail(stride=lambda x: x.as_strided(x.shape, (1, x.shape[0])).clone()
                                           .as_strided(x.shape, (1, x.shape[0]))))
    assert "the values are no longer x's" in result.en and "只改变它们在内存中的位置" in result.zh


def test_lab07_3_new_values_for_dtype_and_requires_grad_are_named():
    result = expect_wrong("lab07.3", _fail(dtype=lambda x: torch.zeros_like(x, dtype=torch.float64)))
    assert "the values are no longer x's" in result.en and "只改变它的 dtype" in result.zh
    result = expect_wrong("lab07.3", _fail(requires_grad=lambda x: torch.randn(x.shape, requires_grad=True)))
    assert "only its requires_grad changed" in result.en and "取值已经不是 x 的了" in result.zh


def test_lab07_3_values_kept_as_the_new_dtype_stores_them_pass():
    expect_passed("lab07.3", _fail(dtype=lambda x: x.to(torch.int32),
                                   stride=lambda x: torch.empty(x.shape[1], x.shape[0]).t().copy_(x),
                                   requires_grad=lambda x: torch.tensor(x.tolist(), requires_grad=True)))


def test_lab07_3_a_new_number_of_dimensions_is_a_shape_change():
    expect_passed("lab07.3", _fail(shape=lambda x: x.reshape(-1).clone()))
    expect_passed("lab07.3", _fail(shape=lambda x: x.unsqueeze(0).clone()))


def test_lab07_3_a_parameter_changes_the_class_as_well():
    result = expect_wrong("lab07.3", _fail(requires_grad=lambda x: torch.nn.Parameter(x.clone())))
    assert "so did: type (Parameter, not Tensor)" in result.en and "也变了：类（Parameter，而不是 Tensor）" in result.zh
    assert "class Parameter" in result.got[0] and "类 Parameter" in result.got[1]


def _router_deciding_by(pred):
    class ByPred(Router):
        def forward(self, x):
            return torch.cond(pred(x), lambda x: torch.relu(self.large(x)), lambda x: self.small(x) * 0.5, (x,))
    return ByPred


def test_lab07_4_the_sum_of_absolute_values_is_named():
    result = expect_wrong("lab07.4", _router_deciding_by(lambda x: x.abs().sum() > 2.0))
    assert "Euclidean norm" in result.en and "欧几里得范数" in result.zh and "1.8" in result.tried[0]


def test_lab07_4_the_largest_absolute_value_is_named():
    result = expect_wrong("lab07.4", _router_deciding_by(lambda x: x.abs().max() > 2.0))
    assert "Euclidean norm" in result.en and "欧几里得范数" in result.zh and "norm 3" in result.tried[0]


def test_lab07_4_the_squared_norm_is_not_called_greater_or_equal():
    result = expect_wrong("lab07.4", _router_deciding_by(lambda x: (x * x).sum() > 2.0))
    assert "squared norm" in result.en and "strict" not in result.en and "平方" in result.zh


def test_lab07_4_bool_of_the_predicate_is_named():
    result = expect_wrong("lab07.4", _router_deciding_by(lambda x: bool(x.norm() > 2.0)))
    assert "bool() of a tensor" in result.en and "bool()" in result.zh and "cannot be exported" in result.en


def test_lab07_4_branches_that_close_over_x_pass():
    class Closure(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda: torch.relu(self.large(x)), lambda: self.small(x) * 0.5, ())
    expect_passed("lab07.4", Closure)


# -- one language at a time ----------------------------------------------------------------------



class _WhereRouter(Router):
    def forward(self, x):
        return torch.where(x.norm() > 2.0, torch.relu(self.large(x)), self.small(x) * 0.5)


def _keeps_item(x):
    y = torch.sin(x) * 2
    scale = y.abs().max().item()
    return torch.where(y.sum() > 0, y / scale, -y) + 1


@pytest.mark.parametrize("task_id, answer", [
    ("lab07.1", _keeps_item),
    ("lab07.2", lambda fn, backend: torch.compile(fn, backend=backend)),
    ("lab07.3", _fail(stride=lambda x: x.t())),
    ("lab07.4", _WhereRouter),
], ids=["lab07.1", "lab07.2", "lab07.3", "lab07.4"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)


def test_lab07_2_eager_on_recompile_is_named():
    # one compile and the right values, but the later batch sizes run eagerly
    def stance(fn, backend):
        compiled, calls = torch.compile(fn, backend=backend), []

        def run(x):
            calls.append(x.shape[0])
            if len(calls) == 1:
                return compiled(x)
            with torch.compiler.set_stance("eager_on_recompile"):
                return compiled(x)
        return run
    result = expect_wrong("lab07.2", stance)
    assert "ran for only 1 of the 3 calls" in result.en and "只运行了 1 次" in result.zh


def test_lab07_2_compiling_the_first_call_only_is_named():
    def first_only(fn, backend):
        compiled, calls = torch.compile(fn, backend=backend), []

        def run(x):
            calls.append(x.shape[0])
            return compiled(x) if len(calls) == 1 else fn(x)
        return run
    result = expect_wrong("lab07.2", first_only)
    assert "the other batch sizes ran eagerly" in result.en and "以 eager 方式运行的" in result.zh


# -- found by a second adversarial review -----------------------------------------------------------

def test_lab07_1_deciding_on_the_sum_of_x_is_named():
    def on_x(x):
        y = torch.sin(x) * 2
        return torch.where(x.sum() > 0, y / y.abs().max(), -y) + 1
    result = expect_wrong("lab07.1", on_x)
    assert "sign of the input's sum" in result.en and "输入之和的正负" in result.zh
    assert "x.sum() > 0 but y.sum() < 0" in result.tried[0] and "x.sum() > 0，但 y.sum() < 0" in result.tried[1]


def test_lab07_1_an_epsilon_on_the_scale_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(
        lambda y, s: torch.where(y.sum() > 0, y / s.clamp_min(1e-6), -y)))
    assert "tiny magnitude" in result.en and "epsilon" in result.en and "极小" in result.zh
    assert "1e-08" in result.tried[0]


def test_lab07_1_a_float32_constant_tensor_is_named():
    def ones_tensor(x):
        y = torch.sin(x) * 2
        return torch.where(y.sum() > 0, y / y.abs().max(), -y) + torch.ones(1)
    result = expect_wrong("lab07.1", ones_tensor)
    assert "promotes a float16 result to float32" in result.en and "float32 的常量张量" in result.zh
    assert "float16" in result.tried[0]


def test_lab07_1_a_changed_shape_is_named():
    def ones_in_dtype(x):  # the dtype is kept, but the constant has a dimension: a 0-d x gives shape (1,)
        y = torch.sin(x) * 2
        return torch.where(y.sum() > 0, y / y.abs().max(), -y) + torch.ones(1, dtype=x.dtype)
    result = expect_wrong("lab07.1", ones_in_dtype)
    assert "input's shape" in result.en and "0 维" in result.zh and "0-d" in result.tried[0]


def test_lab07_1_replacing_nan_is_named():
    reference = solution("lab07", "no_breaks")
    result = expect_wrong("lab07.1", lambda x: torch.nan_to_num(reference(x)))
    assert "NaN" in result.en and "replaced it" in result.en and "NaN 也不例外" in result.zh


def test_lab07_1_right_answers_written_differently_pass():
    def reciprocal_amax(x):  # a division written differently (y * (1 / scale) overflows on a subnormal input)
        y = 2 * torch.sin(x)
        return torch.where(y.sum() > 0, torch.div(y, y.abs().amax()), y.neg()).add(1)

    def cond_on_x(x):
        def positive(t):
            y = torch.sin(t) * 2
            return y / torch.max(torch.abs(y)) + 1

        def other(t):
            return 1 - torch.sin(t) * 2
        return torch.cond((torch.sin(x) * 2).sum() > 0, positive, other, (x,))
    for answer in (reciprocal_amax, cond_on_x):
        expect_passed("lab07.1", answer)


def test_lab07_4_a_wrong_predicate_is_not_called_swapped_branches():
    class OnSum(Router):
        def forward(self, x):
            return torch.cond(x.sum() > 2.0, lambda x: torch.relu(self.large(x)),
                              lambda x: self.small(x) * 0.5, (x,))
    result = expect_wrong("lab07.4", OnSum)
    assert "predicate is not Router's" in result.en and "条件与 Router 的不同" in result.zh
    assert "first function torch.cond gets" not in result.en and "第一个函数" not in result.zh


def test_lab07_4_swapped_branches_are_named_on_every_input():
    class Swapped(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda x: self.small(x) * 0.5,
                              lambda x: torch.relu(self.large(x)), (x,))
    result = expect_wrong("lab07.4", Swapped)
    assert "on every input" in result.en and "first function torch.cond gets" in result.en
    assert "每个输入上" in result.zh and "第一个函数" in result.zh


def test_lab07_1_a_tiny_epsilon_added_to_the_scale_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(
        lambda y, s: torch.where(y.sum() > 0, y / (s + 1e-12), -y)))
    assert "tiny magnitude" in result.en and "epsilon" in result.zh


def test_lab07_1_another_decision_is_not_called_swapped_branches():
    # a majority vote of the signs of y: the other branch on some inputs only
    result = expect_wrong("lab07.1", _no_breaks_variant(
        lambda y, s: torch.where((y > 0).sum() * 2 > y.numel(), y / s, -y)))
    assert "though not on every input" in result.en and "并非在每个输入上都如此" in result.zh
    assert "on every input: y / scale" not in result.en


def test_lab07_1_swapped_branches_are_named_on_every_input():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y.sum() > 0, -y, y / s)))
    assert "other branch on every input" in result.en and "每个输入上都是" in result.zh


# -- found by a third adversarial review ------------------------------------------------------------

def _messy_through(dtype, sum_only=False):
    """messy computed in ``dtype`` (or only its y.sum()), the result given the input's dtype back."""
    def answer(x):
        if sum_only:
            y = torch.sin(x) * 2
            return torch.where(y.to(dtype).sum() > 0, y / y.abs().max(), -y) + 1
        y = torch.sin(x.to(dtype)) * 2
        return (torch.where(y.sum() > 0, y / y.abs().max(), -y) + 1).to(x.dtype)
    return answer


@pytest.mark.parametrize("dtype, sum_only, seen", [
    (torch.float32, False, "float64"),   # x.float() inside, cast back: float64 loses its precision
    (torch.float64, True, "float32"),    # y.double().sum(): the branch of a float32 sum that rounds to 0
    (torch.float64, False, "float32"),   # all of it in float64: the same branch
    (torch.float32, True, "float64"),    # y.float().sum() of a float64 y
], ids=["float32-inside", "double-sum", "float64-inside", "float32-sum"])
def test_lab07_1_computing_in_another_dtype_is_named(dtype, sum_only, seen):
    result = expect_wrong("lab07.1", _messy_through(dtype, sum_only))
    assert "another dtype than the input's" in result.en and "与输入不同的 dtype" in result.zh
    assert seen in result.tried[0] and seen in result.tried[1]


def test_lab07_1_computing_a_float16_input_in_float32_is_named():
    def upcast_half(x):  # more precise than messy, but not messy: the branch of a sum near 0 differs
        return _messy_through(torch.float32)(x) if x.dtype == torch.float16 else solution("lab07", "no_breaks")(x)
    result = expect_wrong("lab07.1", upcast_half)
    # its result is bit for bit the other branch of a float16 y.sum() too: named with every way a sum rounds otherwise
    assert "another dtype" in result.en and "float16" in result.tried[0] and "与输入不同的 dtype" in result.zh


def _config_left_changed(fn, backend):
    torch._dynamo.config.assume_static_by_default = False
    return torch.compile(fn, backend=backend)


def _sources_left_changed(fn, backend):
    # marks the input dynamic for every later compile in the process, not only for this function
    torch.compiler.config.dynamic_sources = "L['x']"
    return torch.compile(fn, backend=backend)


def _stance_left_changed(fn, backend):
    compiled = torch.compile(fn, backend=backend, dynamic=True)
    torch.compiler.set_stance("eager_on_recompile")
    return compiled


@pytest.mark.parametrize("answer, named", [
    (_config_left_changed, "torch._dynamo.config.assume_static_by_default: True -> False"),
    (_sources_left_changed, "torch.compiler.config.dynamic_sources: '' -> \"L['x']\""),
    (_stance_left_changed, "torch.compiler stance: 'default' -> 'eager_on_recompile'"),
], ids=["config", "compiler-config", "stance"])
def test_lab07_2_a_process_wide_setting_is_named_and_put_back(answer, named):
    from torch._dynamo import eval_frame
    before = (torch._dynamo.config.get_config_copy(), torch.compiler.config.get_config_copy(),
              eval_frame._stance)
    result = expect_wrong("lab07.2", answer)
    assert (torch._dynamo.config.get_config_copy(), torch.compiler.config.get_config_copy(),
            eval_frame._stance) == before
    assert "for the whole process" in result.en and "整个进程的 Dynamo 设置" in result.zh
    assert "for this function only" in result.en and "只针对这个函数" in result.zh
    assert named in result.got


def test_lab07_2_a_setting_changed_only_during_the_call_passes():
    def patched(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            with torch._dynamo.config.patch(automatic_dynamic_shapes=True, assume_static_by_default=False):
                return compiled(x)
        return run
    expect_passed("lab07.2", patched)


def test_lab07_1_a_config_change_inside_the_answer_is_named():
    reference = solution("lab07", "no_breaks")

    def sets_config(x):
        torch._dynamo.config.capture_scalar_outputs = True
        return reference(x)
    before = torch._dynamo.config.capture_scalar_outputs
    result = expect_wrong("lab07.1", sets_config)
    assert torch._dynamo.config.capture_scalar_outputs == before
    assert "capture_scalar_outputs" in result.got and "Dynamo 设置" in result.zh


class _BothBeforeCond(Router):
    def forward(self, x):
        a, b = torch.relu(self.large(x)), self.small(x) * 0.5
        return torch.cond(x.norm() > 2.0, lambda a, b: a.clone(), lambda a, b: b.clone(), (a, b))


class _BothClosedOver(Router):
    def forward(self, x):
        a, b = torch.relu(self.large(x)), self.small(x) * 0.5
        return torch.cond(x.norm() > 2.0, lambda: a + 0, lambda: b + 0, ())


def test_lab07_4_both_results_computed_before_cond_are_named():
    for model in (_BothBeforeCond, _BothClosedOver):
        result = expect_wrong("lab07.4", model)
        assert "before torch.cond, outside its branches" in result.en and "在分支之外" in result.zh
        assert "self.large" in result.got[0] and "self.small" in result.got[1]


def test_lab07_4_one_layer_run_before_cond_is_named():
    class LargeOutside(Router):
        def forward(self, x):
            a = self.large(x)
            return torch.cond(x.norm() > 2.0, lambda a, x: torch.relu(a), lambda a, x: self.small(x) * 0.5, (a, x))
    result = expect_wrong("lab07.4", LargeOutside)
    assert "runs self.large before torch.cond" in result.en and "whichever branch is chosen" in result.en
    assert "无论选中哪个分支" in result.zh and result.got == ("outside torch.cond: self.large", "torch.cond 之外：self.large")


def test_lab07_4_a_branch_returning_a_tensor_computed_outside_it_is_named():
    class Decoration(Router):
        def forward(self, x):
            a, b = torch.relu(self.large(x)), self.small(x) * 0.5
            return torch.cond(x.norm() > 2.0, lambda x: a, lambda x: b, (x,))
    result = expect_wrong("lab07.4", Decoration)
    assert "did not compute itself" in result.en and "不是它自己计算出的张量" in result.zh
    assert "aliasing" in result.got and "Python decision" not in result.en


def test_lab07_4_a_branch_running_both_layers_is_named():
    class Both(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda x: torch.relu(self.large(x)) + 0 * self.small(x),
                              lambda x: self.small(x) * 0.5, (x,))
    result = expect_wrong("lab07.4", Both)
    assert "only that one" in result.en and "只运行自己的那一层" in result.zh
    assert "true branch reads self.large, self.small" in result.got[0]


def test_lab07_4_branches_written_as_methods_pass():
    class Methods(Router):
        def _big(self, t):
            return self.large(t).clamp_min(0)

        def _little(self, t):
            return 0.5 * self.small(t)

        def forward(self, x):
            return torch.cond(torch.linalg.vector_norm(x) > 2, self._big, self._little, (x,))
    expect_passed("lab07.4", Methods)


# -- found by this round's own attack ----------------------------------------------------------------

def test_lab07_1_an_answer_that_needs_a_contiguous_input_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(
        y.sum() > 0, y / y.view(-1).abs().max(), -y)))
    assert "not contiguous in memory" in result.en and "内存不连续" in result.zh
    assert "transposed" in result.tried[0] and "转置" in result.tried[1]


def test_lab07_1_a_sum_that_skips_nan_is_named():
    def nansum(x):
        y = torch.sin(x) * 2
        return torch.where(y.nansum() > 0, y / y.abs().max(), -y) + 1
    result = expect_wrong("lab07.1", nansum)
    assert "takes the y / scale branch when y holds a NaN" in result.en and "走了 y / scale 分支" in result.zh
    assert "element by element" not in result.en


@pytest.mark.parametrize("dim", [0, -1])
def test_lab07_1_a_scale_per_row_or_column_is_named(dim):
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(
        y.sum() > 0, y / y.abs().amax(dim=dim, keepdim=True), -y)))
    assert "each row or column" in result.en and "每一行或每一列" in result.zh


def test_lab07_1_bool_of_the_decision_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.cond(
        bool(y.sum() > 0), lambda y, s: y / s, lambda y, s: -y, (y, s))))
    assert "bool() of a tensor" in result.en and "bool()" in result.zh and "keep the scale" not in result.en


def test_lab07_1_tolist_is_named():
    def tolist(x):
        y = torch.sin(x) * 2
        scale = max(abs(v) for v in y.flatten().tolist())
        return torch.where(y.sum() > 0, y / scale, -y) + 1
    result = expect_wrong("lab07.1", tolist)
    assert "Tensor.tolist()" in result.en and "Tensor.tolist()" in result.zh and "读进 Python" in result.zh


def test_lab07_2_clearing_the_cache_between_calls_is_named():
    def reset_each(fn, backend):
        compiled = torch.compile(fn, backend=backend, dynamic=True)

        def run(x):
            torch._dynamo.reset()
            return compiled(x)
        return run
    result = expect_wrong("lab07.2", reset_each)
    assert "thrown away between calls" in result.en and "被丢弃了" in result.zh
    assert "dynamic shapes are off" not in result.en


@pytest.mark.parametrize("bound", [{"min": 2}, {"max": 1000}], ids=["min", "max"])
def test_lab07_2_one_end_of_a_range_is_named(bound):
    # on the installed torch, mark_dynamic(x, 0, min=2) or (..., max=1000) alone stops with an AssertionError
    # inside torch
    result = expect_wrong("lab07.2", _marked_with(**bound))
    assert "only one end of its range" in result.en and "只给 mark_dynamic 指定范围的一端" in result.zh
    assert ("max=None" if "min" in bound else "min=None") in result.got[0] and "AssertionError" in result.got[1]


def test_lab07_1_an_epsilon_on_a_float64_input_is_not_called_another_dtype():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y.sum() > 0, y / (s + 1e-8), -y)))
    assert "another dtype" not in result.en


def test_lab07_1_a_print_kept_outside_compiles_is_named():
    def prints_when_eager(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        if not torch.compiler.is_compiling():
            print("scale:", scale)
        return torch.where(y.sum() > 0, y / scale, -y) + 1
    result = expect_wrong("lab07.1", prints_when_eager)
    assert "printed when called eagerly" in result.en and "打印了内容" in result.zh


def test_lab07_4_a_threshold_kept_as_a_buffer_passes():
    class Buffered(Router):
        def __init__(self):
            super().__init__()
            self.register_buffer("limit", torch.tensor(2.0))

        def forward(self, x):
            return torch.cond(x.norm() > self.limit, lambda t: torch.relu(self.large(t)),
                              lambda t: self.small(t) * 0.5, (x,))
    expect_passed("lab07.4", Buffered)


@pytest.mark.parametrize("outside", ["relu", "half"])
def test_lab07_4_a_last_step_applied_to_both_branches_is_named(outside):
    class Outside(Router):
        def forward(self, x):
            if outside == "relu":
                return torch.relu(torch.cond(x.norm() > 2.0, lambda x: self.large(x),
                                             lambda x: self.small(x) * 0.5, (x,)))
            return torch.cond(x.norm() > 2.0, lambda x: torch.relu(self.large(x)),
                              lambda x: self.small(x), (x,)) * 0.5
    result = expect_wrong("lab07.4", Outside)
    assert "the other branch's result too" in result.en and "也用在了另一个分支的结果上" in result.zh


def test_lab07_3_a_slice_with_a_step_for_the_stride_is_named():
    result = expect_wrong("lab07.3", _fail(stride=lambda x: x[::2]))
    assert "a slice with a step" in result.en and "带步长的切片" in result.zh


# -- found by a fourth adversarial review ----------------------------------------------------------

@pytest.mark.parametrize("decide, scale", [
    (lambda y: y.mean() > 0, None),                       # the mean of a subnormal sum rounds to 0
    (lambda y: y.sum() > 1e-12, None),                    # a threshold above 0
    (lambda y: y.sum() > 0, lambda s: s.clamp_min(1e-12)),  # a bound far below the 1e-08 probe's scale
], ids=["mean", "threshold", "clamp-1e-12"])
def test_lab07_1_tiny_inputs_name_a_bound_or_a_threshold(decide, scale):
    def answer(x):
        y = torch.sin(x) * 2
        s = y.abs().max() if scale is None else scale(y.abs().max())
        return torch.where(decide(y), y / s, -y) + 1
    result = expect_wrong("lab07.1", answer)
    assert "tiny magnitude" in result.en and "threshold above 0" in result.en and "epsilon" in result.en
    assert "极小" in result.zh and "阈值" in result.zh and "平均值" in result.zh
    assert "tiny" in result.tried[0] and "极小" in result.tried[1]


def test_lab07_1_multiplying_by_the_reciprocal_of_the_scale_is_named():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y.sum() > 0, y * (1 / s), -y)))
    assert "1 / scale, overflows to inf" in result.en and "溢出为 inf" in result.zh
    assert "subnormal" in result.tried[0] and "次正规数" in result.tried[1]
    assert "branch not taken" not in result.en and "0 / 0" not in result.en


@pytest.mark.parametrize("total", [
    lambda y: y.sum(0).sum(),             # columns first
    lambda y: y.sum(-1).sum(),            # rows first
    lambda y: y.flatten().cumsum(0)[-1],  # a running sum: torch accumulates a float32 cumsum in float64
], ids=["columns-first", "rows-first", "cumsum"])
def test_lab07_1_a_sum_taken_another_way_is_named(total):
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(total(y) > 0, y / s, -y)))
    assert "within rounding of 0" in result.en and "in another order" in result.en and "cumulative sum" in result.en
    assert "与 0 只差舍入误差" in result.zh and "按另一种顺序求和" in result.zh and "累积和" in result.zh
    assert "messy's computed in another dtype" not in result.en  # the whole computation is in the input's dtype


def test_lab07_1_right_answers_for_the_tiny_and_rounding_inputs_pass():
    def sign(x):
        y = torch.sin(x) * 2
        return torch.where(torch.sign(y.sum()) > 0, y / torch.linalg.vector_norm(y, float("inf")), -y) + \
            torch.ones_like(y)

    expect_passed("lab07.1", sign)


@pytest.mark.parametrize("flatten", [lambda y: y.reshape(-1), lambda y: y.flatten(), lambda y: y.contiguous()],
                         ids=["reshape", "flatten", "contiguous"])
def test_lab07_1_a_sum_of_a_flattened_copy_is_named(flatten):
    """On a transposed y, y.sum() adds in memory order; a flattened copy adds in the logical order."""
    result = expect_wrong("lab07.1", _no_breaks_variant(
        lambda y, s: torch.where(flatten(y).sum() > 0, y / s, -y)))
    assert "transposed" in result.tried[0] and "order of summation" in result.tried[0]


def _late_restore(fn, backend):
    # changed when compile_once returns, put back by the first call: another compile in between sees it changed
    torch._dynamo.config.assume_static_by_default = False
    compiled = torch.compile(fn, backend=backend)

    def run(x):
        out = compiled(x)
        torch._dynamo.config.assume_static_by_default = True
        return out
    return run


def _restored_on_the_third_call(fn, backend):
    compiled, calls = torch.compile(fn, backend=backend), []

    def run(x):
        calls.append(x.shape[0])
        if len(calls) == 1:
            torch._dynamo.config.assume_static_by_default = False
        out = compiled(x)
        if len(calls) == 3:
            torch._dynamo.config.assume_static_by_default = True
        return out
    return run


@pytest.mark.parametrize("answer, when, when_zh", [
    (_late_restore, "when compile_once returned", "compile_once 返回时"),
    (_restored_on_the_third_call, "after that call", "这次调用之后"),
], ids=["until-the-first-call", "between-calls"])
def test_lab07_2_settings_changed_between_compile_once_and_its_calls_are_named(answer, when, when_zh):
    from torch._dynamo import eval_frame
    before = (torch._dynamo.config.get_config_copy(), eval_frame._stance)
    result = expect_wrong("lab07.2", answer)
    assert (torch._dynamo.config.get_config_copy(), eval_frame._stance) == before
    assert "for the whole process" in result.en and "整个进程的 Dynamo 设置" in result.zh
    assert when in result.tried[0] and when_zh in result.tried[1]
    assert "assume_static_by_default: True -> False" in result.got


def _no_grad_call(fn, backend):
    compiled = torch.compile(fn, backend=backend, dynamic=True)

    def run(x):
        with torch.no_grad():
            return compiled(x)
    return run


@pytest.mark.parametrize("answer", [
    _no_grad_call,
    lambda fn, backend: (lambda c: lambda x: c(x).detach())(torch.compile(fn, backend=backend, dynamic=True)),
], ids=["no_grad", "detach"])
def test_lab07_2_a_result_without_gradients_is_named(answer):
    result = expect_wrong("lab07.2", answer)
    assert "carries no gradients" in result.en and "不带梯度" in result.zh
    assert result.got == "requires_grad=False"


def test_lab07_2_mark_unbacked_passes():
    def unbacked(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.decorators.mark_unbacked(x, 0)
            return compiled(x)
        return run
    expect_passed("lab07.2", unbacked)


@pytest.mark.parametrize("shape, small", [
    (lambda x: x[:2], "(2, 3)"), (lambda x: x[:1], "(1, 3)"), (lambda x: x.view(-1, 2), "(2, 2)"),
], ids=["first-two-rows", "first-row", "pairs"])
def test_lab07_3_a_shape_that_a_small_x_keeps_is_named(shape, small):
    result = expect_wrong("lab07.3", _fail(shape=shape))
    assert "nothing would recompile" in result.en and "new shape is x's own" in result.en
    assert "新形状就是 x 自己的形状" in result.zh and small in result.tried[0]


def test_lab07_3_a_transposed_contiguous_copy_keeps_the_strides_of_a_single_row():
    result = expect_wrong("lab07.3", _fail(stride=lambda x: x.t().contiguous().t()))
    assert "dimension of size 1" in result.en and "已经算是连续的" in result.zh
    assert "(1, 3)" in result.tried[0] and "(1, 3)" in result.tried[1]


def test_lab07_3_strides_that_differ_for_every_shape_pass():
    expect_passed("lab07.3", _fail(stride=lambda x: torch.cat([x, x], 1)[:, :x.shape[1]],
                                   shape=lambda x: torch.cat([x, x], 1)))
    expect_passed("lab07.3", _fail(stride=lambda x: torch.stack([x, x], 1)[:, 0]))
    expect_passed("lab07.3", _fail(stride=lambda x: torch.empty_strided(x.shape, (2 * x.shape[1], 1)).copy_(x)))


@pytest.mark.parametrize("pred", [
    lambda x: (x * x).sum() > 4.0,
    lambda x: x.pow(2).sum().sqrt() > 2.0,
    lambda x: x.double().norm() > 2.0,
    lambda x: x.norm(dim=-1).norm() > 2.0,
], ids=["squares-vs-4", "sqrt-of-squares", "float64", "norm-of-row-norms"])
def test_lab07_4_a_norm_computed_another_way_is_named(pred):
    result = expect_wrong("lab07.4", _router_deciding_by(pred))
    assert "computes the norm another way" in result.en and "用别的方式计算范数" in result.zh
    assert "computed another way rounds above 2.0" in result.tried[0]
    assert "strict" not in result.en


@pytest.mark.parametrize("pred", [
    lambda x: torch.linalg.matrix_norm(x) > 2.0, lambda x: x.norm(dim=(0, 1)) > 2.0,
], ids=["matrix_norm", "dims-0-1"])
def test_lab07_4_a_predicate_for_matrices_only_is_named(pred):
    result = expect_wrong("lab07.4", _router_deciding_by(pred))
    assert "failed on an x of shape (4,)" in result.en and "形状为 (4,) 的 x 上出错了" in result.zh
    assert "any shape whose last dimension is 4" in result.en


def test_lab07_4_relu_chosen_again_after_cond_is_named():
    class ReluAfter(Router):
        def forward(self, x):
            p = x.norm() > 2.0
            out = torch.cond(p, lambda x: self.large(x), lambda x: self.small(x) * 0.5, (x,))
            return torch.where(p, torch.relu(out), out)
    result = expect_wrong("lab07.4", ReluAfter)
    assert "after torch.cond, outside its branches" in result.en and "在 torch.cond 之后" in result.zh
    assert result.got == ("after torch.cond: relu, where", "torch.cond 之后：relu、where")


def test_lab07_4_right_answers_with_other_shapes_of_code_pass():
    import torch.nn.functional as F

    class Operands(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda x, w, b, v, c: F.linear(x, w, b).clamp(min=0),
                              lambda x, w, b, v, c: F.linear(x, v, c) / 2,
                              (x, self.large.weight, self.large.bias, self.small.weight, self.small.bias))

    class OneTuple(Router):
        def forward(self, x):
            return torch.cond(torch.linalg.norm(x) > 2.0, lambda x: (torch.relu(self.large(x)),),
                              lambda x: (self.small(x) * 0.5,), (x,))[0]
    for model in (Operands, OneTuple):
        expect_passed("lab07.4", model)


def test_lab07_3_a_fixed_new_shape_is_named():
    # every probe shape differs from 3 x 3, but for an x of shape 3 x 3 the "new" shape is x's own
    def fixed(x, kind):
        if kind == "shape":
            return torch.zeros(3, 3)
        return solution("lab07", "fail_guard")(x, kind)
    result = expect_wrong("lab07.3", fixed)
    assert "(3, 3)" in result.tried[0] and "every x" in result.en and "对每个 x" in result.zh


class _NoOpAfterCond(torch.nn.Module):
    """A right CondRouter that adds steps which change nothing after torch.cond."""

    def __init__(self, then):
        super().__init__()
        self.small, self.large, self.then = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), then

    def forward(self, x):
        y = torch.cond(x.norm() > 2.0, lambda t: torch.relu(self.large(t)), lambda t: self.small(t) * 0.5, (x,))
        return self.then(y, x)


@pytest.mark.parametrize("then", [
    lambda y, x: y.to(x.dtype), lambda y, x: y.view_as(x), lambda y, x: y.reshape(x.shape).contiguous(),
], ids=["to-dtype", "view_as", "reshape"])
def test_lab07_4_a_step_that_changes_nothing_after_cond_passes(then):
    # third attack: these were rejected, and the message showed torch's internal _assert_tensor_metadata
    expect_passed("lab07.4", _NoOpAfterCond(then))


def test_lab07_4_a_dtype_change_after_cond_is_still_work_after_the_choice():
    result = expect_wrong("lab07.4", _NoOpAfterCond(lambda y, x: y.to(torch.float64)))
    assert "_assert_tensor_metadata" not in result.en + str(result.got)


# -- found by the fourth attack ------------------------------------------------------------------

@pytest.mark.parametrize("scale", [lambda y, s: s + 1e-300, lambda y, s: s.clamp_min(1e-300)],
                         ids=["plus", "clamp_min"])
def test_lab07_1_an_epsilon_that_only_float64_keeps_is_named(scale):
    """1e-300 rounds to 0 in float32 and float16: only a float64 subnormal input shows it."""
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y.sum() > 0, y / scale(y, s), -y)))
    assert "tiny magnitude" in result.en and "float64" in result.tried[0]


def test_lab07_checks_run_under_dynamo_defaults_not_the_notebooks():
    """A notebook that lets print stay in the graph no longer passes a print kept in the answer."""
    reference = solution("lab07", "no_breaks")

    def keeps_print(x):
        print("scale")
        return reference(x)
    torch._dynamo.config.reorderable_logging_functions.add(print)
    try:
        result = expect_wrong("lab07.1", keeps_print)
        assert "print" in result.en and "your notebook has changed some of Dynamo's settings" in result.en
    finally:
        torch._dynamo.config.reorderable_logging_functions.discard(print)


def test_lab07_references_pass_under_a_notebooks_stance():
    with torch.compiler.set_stance("force_eager"):
        for task_id, name in (("lab07.1", "no_breaks"), ("lab07.2", "compile_once"), ("lab07.4", "CondRouter")):
            expect_passed(task_id, solution("lab07", name))


@pytest.mark.parametrize("cut", ["detach", "no_grad"])
def test_lab07_4_an_output_without_gradient_is_named(cut):
    class Cut(Router):
        def forward(self, x):
            def run():
                return torch.cond(x.norm() > 2.0, lambda t: torch.relu(self.large(t)), lambda t: self.small(t) * 0.5,
                                  (x,))
            if cut == "no_grad":
                with torch.no_grad():
                    return run()
            return run().detach()
    result = expect_wrong("lab07.4", Cut)
    assert "carries no gradient" in result.en and "不带梯度" in result.zh


def test_lab07_4_a_second_cond_after_the_first_is_named():
    class Twice(Router):
        def forward(self, x):
            p = x.norm() > 2.0
            o = torch.cond(p, lambda t: self.large(t), lambda t: self.small(t), (x,))
            return torch.cond(p, torch.relu, lambda o: o * 0.5, (o,))
    result = expect_wrong("lab07.4", Twice)
    assert "second torch.cond" in result.en and "第二个 torch.cond" in result.zh


def test_lab07_2_a_stance_field_left_changed_is_shown():
    def unsafe(fn, backend):
        torch.compiler.set_stance("default", skip_guard_eval_unsafe=True)
        return torch.compile(fn, backend=backend)
    result = expect_wrong("lab07.2", unsafe)
    assert "torch.compiler stance skip_guard_eval_unsafe: False -> True" in result.got


def test_lab07_2_a_negative_dim_is_named():
    def negative(fn, backend):
        compiled = torch.compile(fn, backend=backend)

        def run(x):
            torch._dynamo.mark_dynamic(x, -2)
            return compiled(x)
        return run
    result = expect_wrong("lab07.2", negative)
    assert "counted from 0, not from the end" in result.en and "从 0 开始数" in result.zh


# -- found by the sixth attack --------------------------------------------------------------------

def test_lab07_1_a_print_to_stderr_kept_outside_compiles_is_named():
    import sys

    def prints_when_eager(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        if not torch.compiler.is_compiling():
            print("scale", scale, file=sys.stderr)
        return torch.where(y.sum() > 0, y / scale, -y) + 1
    result = expect_wrong("lab07.1", prints_when_eager)
    assert "printed when called eagerly" in result.en


def test_lab07_1_an_epsilon_is_not_called_greater_or_equal():
    result = expect_wrong("lab07.1", _no_breaks_variant(lambda y, s: torch.where(y.sum() > 0, y / (s + 1e-8), -y)))
    assert "strict y.sum() > 0" not in result.en and "another dtype" not in result.en


# -- found by the seventh attack (issue 30) ------------------------------------------------------

def test_lab07_1_a_warning_kept_out_of_compiles_is_printing():
    import warnings

    def warns(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        if not torch.compiler.is_compiling():
            warnings.warn(f"scale: {scale}")
        return torch.where(y.sum() > 0, y / scale, -y) + 1

    result = expect_wrong("lab07.1", warns)
    assert "printed when called eagerly" in result.en and "UserWarning: scale" in result.got


def test_lab07_1_a_no_breaks_already_compiled_passes():
    # torch.compile(no_breaks) compiled again with fullgraph=True used to read as "still has a graph break"
    reference = solution("lab07", "no_breaks")
    expect_passed("lab07.1", torch.compile(reference, backend="eager"))
    expect_passed("lab07.1", torch.compile(reference, backend="eager", fullgraph=True))


def test_lab07_1_an_epsilon_on_float64_is_not_called_a_decision_per_row():
    # on a 1-d x the per-row slip is messy itself: it used to match any float64 error below 1e-5
    def epsilon(x):
        y = torch.sin(x) * 2
        return torch.where(y.sum() > 0, y / (y.abs().max() + 1e-8), -y) + 1

    result = expect_wrong("lab07.1", epsilon)
    assert "row by row" not in result.en and "按行判断" not in result.zh
    assert "float64" in result.tried[0]


def test_lab07_4_a_relu6_for_the_relu_is_caught_far_from_the_threshold():
    import torch.nn.functional as F

    class Relu6(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0, lambda t: F.relu6(self.large(t)), lambda t: self.small(t) * 0.5, [x])

    result = expect_wrong("lab07.4", Relu6)
    assert "norm 40" in result.tried[0]


# -- found by the eighth attack (issue 30) -------------------------------------------------------

def test_lab07_1_a_decision_on_the_scaled_values_is_caught():
    def scaled(x):
        y = torch.sin(x) * 2
        z = y / y.abs().max()
        return torch.where(z.sum() > 0, z, -y) + 1

    result = expect_wrong("lab07.1", scaled)
    assert "(y / scale).sum() is not" in result.tried[0]


def test_lab07_1_a_warning_torch_gives_is_not_printing():
    # torch.tensor(a tensor) warns from C++ with the learner's own file and line: not a print of the answer's
    def rewrapped(x):
        y = torch.sin(x) * 2
        scale = torch.tensor(y.abs().max())
        return torch.where(y.sum() > 0, y / scale, -y) + 1

    expect_passed("lab07.1", rewrapped)


def test_lab07_4_the_predicate_written_the_other_way_round_is_caught_on_a_nan():
    # x.norm() <= 2.0 with the branches swapped agrees with Router except where the norm is NaN
    class AtMost(Router):
        def forward(self, x):
            return torch.cond(x.norm() <= 2.0, lambda t: self.small(t) * 0.5,
                              lambda t: torch.relu(self.large(t)), (x,))

    result = expect_wrong("lab07.4", AtMost)
    assert "NaN > 2.0 is False" in result.tried[0] and "NaN > 2.0 为 False" in result.tried[1]


def test_lab07_4_a_strict_predicate_written_another_way_passes():
    class Shifted(Router):
        def forward(self, x):
            return torch.cond((x.norm() - 2.0) > 0, lambda t: torch.relu(self.large(t)),
                              lambda t: self.small(t) * 0.5, (x,))

    expect_passed("lab07.4", Shifted)


# -- found by the ninth attack (issue 30) --------------------------------------------------------

def test_lab07_1_a_decision_on_the_scaled_values_is_named():
    def scaled(x):
        y = torch.sin(x) * 2
        z = y / y.abs().max()
        return torch.where(z.sum() > 0, z, -y) + 1

    result = expect_wrong("lab07.1", scaled)
    assert "sum of y / scale" in result.en and "y / scale 之和" in result.zh
    assert "another dtype" not in result.en


@pytest.mark.parametrize("how", ["imported warn", "warn_explicit"])
def test_lab07_1_a_warning_by_another_route_is_printing(how):
    import warnings

    namespace = {"torch": torch, "warnings": warnings}
    call = ("warn(f'scale: {scale}')" if how == "imported warn"
            else "warnings.warn_explicit(f'scale: {scale}', UserWarning, 'cell', 1)")
    exec(f"""from warnings import warn
def no_breaks(x):
    y = torch.sin(x) * 2
    scale = y.abs().max()
    if not torch.compiler.is_compiling():
        {call}
    return torch.where(y.sum() > 0, y / scale, -y) + 1
""", namespace)
    result = expect_wrong("lab07.1", namespace["no_breaks"])
    assert "printed when called eagerly" in result.en and "UserWarning: scale" in result.got


def test_lab07_2_another_backend_is_named_before_its_rounding():
    # inductor's rounding of a near-zero gradient used to be reported as "other gradients than fn's"
    result = expect_wrong("lab07.2", lambda fn, backend: torch.compile(fn, dynamic=True))
    assert "never ran" in result.en and "从未运行" in result.zh


# -- found by the tenth attack (issue 30) --------------------------------------------------------

def test_lab07_1_printing_only_on_some_inputs_is_caught():
    def prints_in_the_else_branch(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        if not torch.compiler.is_compiling() and not (y.sum() > 0):
            print("else branch, scale:", scale)
        return torch.where(y.sum() > 0, y / scale, -y) + 1

    result = expect_wrong("lab07.1", prints_in_the_else_branch)
    assert "printed when called eagerly" in result.en and "else branch" in result.got


def test_lab07_4_a_tolerance_in_the_predicate_is_caught_just_above_2():
    class Tolerant(Router):
        def forward(self, x):
            return torch.cond(x.norm() > 2.0 + 1e-6, lambda t: torch.relu(self.large(t)),
                              lambda t: self.small(t) * 0.5, (x,))

    result = expect_wrong("lab07.4", Tolerant)
    assert "just above 2.0" in result.tried[0]


# -- found by the eleventh attack (issue 30) -----------------------------------------------------

def test_lab07_1_a_result_cut_off_from_autograd_is_named():
    def detached(x):
        y = torch.sin(x) * 2
        return (torch.where(y.sum() > 0, y / y.abs().max(), -y) + 1).detach()

    result = expect_wrong("lab07.1", detached)
    assert "cuts its result off from autograd" in result.en and "与 autograd 断开" in result.zh


# -- found by the twelfth attack (issue 30) ------------------------------------------------------

def test_lab07_1_an_else_branch_cut_off_from_autograd_is_named():
    def else_detached(x):
        y = torch.sin(x) * 2
        return torch.where(y.sum() > 0, y / y.abs().max(), -y.detach()) + 1

    result = expect_wrong("lab07.1", else_detached)
    assert "takes the else branch" in result.en and "走 else 分支" in result.zh and "x.grad" in result.got


@pytest.mark.parametrize("then", ["detach", "no_grad"])
def test_lab07_1_the_scaled_branch_cut_off_from_autograd_is_named(then):
    def cut(x):
        y = torch.sin(x) * 2
        scale = y.abs().max()
        if then == "detach":
            scaled = (y / scale).detach()
        else:
            with torch.no_grad():
                scaled = y / scale
        return torch.where(y.sum() > 0, scaled, -y) + 1

    result = expect_wrong("lab07.1", cut)
    assert "takes the y / scale branch" in result.en


def test_lab07_1_a_scale_kept_out_of_autograd_passes():
    def scale_detached(x):
        y = torch.sin(x) * 2
        return torch.where(y.sum() > 0, y / y.abs().max().detach(), -y) + 1

    expect_passed("lab07.1", scale_detached)
