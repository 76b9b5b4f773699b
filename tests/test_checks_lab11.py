"""Lab 11 checkers: reference answers pass, stubs are "not yet implemented", re-checking is safe,
and the common mistakes get their specific messages."""
from __future__ import annotations


import math

import pytest
import torch

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint
from fxcourse.checks.lab11 import py_cube_scale, py_softsign, windows_real


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- answers written another way ------------------------------------------------------------

def softsign_op_maker(fake=lambda x: x.new_empty(x.shape), with_fake=True, name_of=lambda name: name,
                      return_op=True, kernel=None, returns="op", mutates_args=()):
    def make_softsign_op(name):
        def softsign(x: torch.Tensor) -> torch.Tensor:
            return (kernel or py_softsign)(x)
        op = torch.library.custom_op(name_of(name), mutates_args=mutates_args)(softsign)
        if with_fake:
            op.register_fake(fake)
        if not return_op:
            return py_softsign
        if returns == "op":
            return op
        namespace, op_name = name.split("::")
        packet = getattr(getattr(torch.ops, namespace), op_name)
        return {"packet": packet, "overload": packet.default, "wrapper": lambda x: packet(x)}[returns]
    return make_softsign_op


def define_and_impl(return_what):
    """The older torch.library.define / impl / register_fake route."""
    def make_softsign_op(name):
        torch.library.define(name, "(Tensor x) -> Tensor")

        @torch.library.impl(name, "cpu")
        def softsign(x):
            return py_softsign(x)

        @torch.library.register_fake(name)
        def _(x):
            return x.new_empty(x.shape)
        namespace, op_name = name.split("::")
        return getattr(getattr(torch.ops, namespace), op_name) if return_what == "packet" else softsign
    return make_softsign_op


def windows_fake_other_way(x, size, step):
    *lead, n = x.shape
    return torch.empty(*lead, (n - size) // step + 1, size, dtype=x.dtype, device=x.device)


def autograd_adder(grad_of=lambda grad, x, s: grad * 3 * s * x ** 2, save_output=False, returns=2):
    def add_autograd(op):
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output if save_output else inputs[0])
            ctx.s = inputs[1]

        def backward(ctx, grad):
            (saved,) = ctx.saved_tensors
            g = grad_of(grad, saved, ctx.s)
            return {2: lambda: (g, None), 1: lambda: g, "list": lambda: [g, None],
                    "s": lambda: (g, (grad * saved ** 3).sum())}[returns]()
        op.register_autograd(backward, setup_context=setup_context)
    return add_autograd


def autograd_with_state(setup, backward):
    """add_autograd from a setup_context(ctx, inputs, output, state) and backward(ctx, grad, state),
    with a dict ``state`` kept in a closure (outside ctx)."""
    def add_autograd(op):
        state = {}
        op.register_autograd(lambda ctx, grad: backward(ctx, grad, state),
                             setup_context=lambda ctx, inputs, output: setup(ctx, inputs, output, state))
    return add_autograd


def _save_x_keep_s(ctx, inputs, output, state):
    ctx.save_for_backward(inputs[0])
    ctx.s = inputs[1]


@pytest.mark.parametrize("task_id, name", [
    ("lab11.1", "make_softsign_op"), ("lab11.2", "windows_fake"), ("lab11.3", "add_autograd"),
])
def test_reference_answers_pass(task_id, name):
    expect_passed(task_id, solution("lab11", name))


def _keep_copy_on_ctx(ctx, inputs, output, state):
    ctx.x, ctx.s = inputs[0].detach().clone(), inputs[1]


def _save_s_as_tensor(ctx, inputs, output, state):
    ctx.save_for_backward(inputs[0], torch.tensor(inputs[1], dtype=inputs[0].dtype))


def _backward_from_two_saved(ctx, grad, state):
    x, s = ctx.saved_tensors
    return grad * 3 * s * x * x, None


def _register_with_torch_library(op):
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.s = inputs[1]

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (3 * ctx.s * x.pow(2) * grad if ctx.needs_input_grad[0] else None), None
    torch.library.register_autograd(op._qualname, backward, setup_context=setup_context)


@pytest.mark.parametrize("task_id, answer", [
    ("lab11.1", softsign_op_maker(fake=lambda x: x.new_empty(x.shape))),
    ("lab11.1", softsign_op_maker(fake=lambda x: torch.empty_like(x, memory_format=torch.contiguous_format))),
    ("lab11.1", softsign_op_maker(fake=lambda x: torch.empty(x.shape, dtype=x.dtype, device=x.device))),
    ("lab11.1", softsign_op_maker(returns="packet")),
    ("lab11.1", softsign_op_maker(returns="overload")),
    ("lab11.1", define_and_impl("packet")),
    # a real kernel in torch ops, made contiguous as the task asks
    ("lab11.1", softsign_op_maker(kernel=lambda x: (x / (1 + x.abs())).contiguous())),
    ("lab11.1", softsign_op_maker(kernel=lambda x: py_softsign(x.contiguous()))),
    ("lab11.2", windows_fake_other_way),
    ("lab11.2", lambda x, size, step: x.unfold(-1, size, step).clone(memory_format=torch.contiguous_format)),
    ("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], len(range(0, x.shape[-1] - size + 1, step)), size))),
    ("lab11.2", lambda x, size, step: torch.empty(*x.shape[:-1], math.ceil((x.shape[-1] - size + 1) / step), size,
                                                  dtype=x.dtype, device=x.device)),
    ("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], (x.shape[-1] - size + step) // step, size))),
    ("lab11.3", autograd_adder(grad_of=lambda grad, x, s: 3 * s * x.pow(2) * grad)),
    ("lab11.3", autograd_with_state(_keep_copy_on_ctx, lambda ctx, grad, state: (grad * 3 * ctx.s * ctx.x ** 2, None))),
    ("lab11.3", autograd_with_state(_save_s_as_tensor, _backward_from_two_saved)),
    ("lab11.3", _register_with_torch_library),
    ("lab11.3", autograd_adder(grad_of=lambda grad, x, s: grad * (3 * s) * x.square())),
    ("lab11.3", autograd_with_state(_save_x_keep_s, lambda ctx, grad, state: (
        grad.mul(ctx.saved_tensors[0].pow(2)).mul(3.0 * ctx.s), None))),
], ids=["1-new_empty", "1-empty_like-contiguous", "1-empty", "1-packet", "1-overload", "1-define-impl",
        "1-torch-kernel", "1-contiguous-first", "2-other", "2-unfold-clone", "2-range", "2-ceil", "2-plus-step", "3-other", "3-ctx-copy", "3-s-tensor",
        "3-torch-library", "3-square", "3-mul-chain"])
def test_answers_written_another_way_pass(task_id, answer):
    expect_passed(task_id, answer)


@pytest.mark.parametrize("task_id, answer", [
    ("lab11.1", softsign_op_maker(fake=lambda x: torch.empty_like(x))),
    ("lab11.2", lambda x, size, step: torch.empty_like(x.unfold(-1, size, step))),
    ("lab11.3", autograd_with_state(_keep_copy_on_ctx, lambda ctx, grad, state: (grad * 3 * ctx.s * ctx.x ** 2, None))),
])
def test_checking_leaves_the_learners_random_numbers_alone(task_id, answer):
    before = torch.random.get_rng_state()
    check(task_id, answer)
    assert torch.equal(before, torch.random.get_rng_state())


@pytest.mark.parametrize("task_id", ["lab11.1", "lab11.2", "lab11.3"])
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


@pytest.mark.parametrize("task_id", ["lab11.1", "lab11.2", "lab11.3"])
def test_every_task_has_a_hint_ladder(task_id):
    steps = [hint(task_id, level=i) for i in (1, 2)]
    assert all(s.count >= 2 and s.en and s.zh for s in steps)
    assert "Lecture 11" in steps[1].en and "第 11 讲" in steps[1].zh


def test_checking_twice_registers_no_clashing_names():
    """Custom ops are global by name: a second check of the same answer must pass too."""
    answer = solution("lab11", "make_softsign_op")
    expect_passed("lab11.1", answer)
    expect_passed("lab11.1", answer)
    expect_passed("lab11.3", solution("lab11", "add_autograd"))
    expect_passed("lab11.3", solution("lab11", "add_autograd"))


# -- exercise 1 mistakes --------------------------------------------------------------------

def test_lab11_1_returning_the_python_function_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(return_op=False))
    assert "plain Python function" in result.en and "产生图中断" in result.zh
    assert "traces into" in result.en and "tolist" in result.got


def test_lab11_1_no_fake_kernel_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(with_fake=False))
    assert "no fake kernel" in result.en and "没有 fake 内核" in result.zh


def test_lab11_1_fake_with_default_dtype_fails_on_float64():
    result = expect_wrong("lab11.1", softsign_op_maker(fake=lambda x: torch.empty(x.shape)))
    assert "wrong dtype" in result.en and "float64" in result.tried[0] and "dtype 不对" in result.zh


def test_lab11_1_fake_that_flattens_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(fake=lambda x: x.new_empty(x.numel())))
    assert "wrong shape" in result.en and "(3, 4)" in result.tried[0] and "形状不对" in result.zh


def test_lab11_1_op_under_a_name_of_the_learners_own_is_named():
    counter = iter(range(1000))
    result = expect_wrong("lab11.1", softsign_op_maker(name_of=lambda name: f"mylab_t::softsign_{next(counter)}"))
    assert "name make_softsign_op is given" in result.en and "检查器用自己的名字" in result.zh


def test_lab11_1_empty_like_fake_fails_on_a_transposed_input():
    """The reviewer's defect: empty_like copies a transposed input's strides; py_softsign's output is contiguous."""
    result = expect_wrong("lab11.1", softsign_op_maker(fake=lambda x: torch.empty_like(x)))
    assert "strides" in result.en and "步长" in result.zh and "transposed" in result.tried[0]
    assert "strides (3, 1)" in result.expected[0] and "strides (1, 4)" in result.got[0]


@pytest.mark.parametrize("fake", [lambda x: x.clone(), lambda x: x / (1 + x.abs()), lambda x: torch.zeros_like(x),
                                  lambda x: torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)],
                         ids=["clone", "computes", "zeros_like", "empty_strided"])
def test_lab11_1_fakes_that_keep_the_input_layout_are_named(fake):
    result = expect_wrong("lab11.1", softsign_op_maker(fake=fake))
    assert "memory layout (strides)" in result.en and "内存布局（步长）" in result.zh


@pytest.mark.parametrize("fake", [lambda x: x, lambda x: x.contiguous()], ids=["x", "contiguous"])
def test_lab11_1_fake_returning_its_input_is_named(fake):
    result = expect_wrong("lab11.1", softsign_op_maker(fake=fake))
    assert "returns its input, or a view of it" in result.en and "输入的视图" in result.zh


def test_lab11_1_fake_on_the_default_device_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(fake=lambda x: torch.empty(x.shape, dtype=x.dtype)))
    assert "input's device" in result.en and "设备" in result.zh and "'meta' device" in result.tried[0]
    assert "device meta" in result.expected[0] and "device cpu" in result.got[0]


@pytest.mark.parametrize("fake", [lambda x: x.new_empty(*x.shape),
                                  lambda x: torch.empty(*x.shape, dtype=x.dtype, device=x.device)],
                         ids=["new_empty", "empty"])
def test_lab11_1_fake_that_fails_on_a_0d_input_is_named(fake):
    result = expect_wrong("lab11.1", softsign_op_maker(fake=fake))
    assert "raised an error for this input" in result.en and "0 维" in result.zh and "0-d" in result.tried[0]


def test_lab11_1_fake_reading_values_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(fake=lambda x: x.new_empty(x.shape) * float(x.sum() * 0 + 1)))
    assert "reads the tensor's values" in result.en and "没有数值" in result.zh


def test_lab11_1_real_kernel_writing_into_its_input_is_named():
    def kernel(x):
        y = py_softsign(x)
        x.copy_(y)
        return y
    result = expect_wrong("lab11.1", softsign_op_maker(kernel=kernel))
    assert "writes into its input" in result.en and "mutates_args" in result.zh


def test_lab11_1_real_kernel_that_fails_on_a_transposed_input_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(kernel=lambda x: py_softsign(x.view(-1)).view(x.shape)))
    assert "calling the op raised an error" in result.en and "非连续" in result.zh and "transposed" in result.tried[0]


def test_lab11_1_fake_that_fails_on_a_transposed_input_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(fake=lambda x: x.new_empty(x.view(-1).shape).view(x.shape)))
    assert "fake kernel raised an error" in result.en and "fake 内核抛出了异常" in result.zh
    assert "transposed" in result.tried[0]


def test_lab11_1_real_kernel_keeping_a_transposed_layout_is_named():
    """The attackers' answer: empty_like + copy_ gives a transposed output for a transposed input,
    and a fake that says the same agrees with it; the task says the output is contiguous."""
    def kernel(x):
        out = torch.empty_like(x)
        out.copy_(py_softsign(x))
        return out
    for fake in (lambda x: torch.empty_like(x), lambda x: x.new_empty(x.shape)):
        result = expect_wrong("lab11.1", softsign_op_maker(kernel=kernel, fake=fake))
        assert "not laid out row by row (contiguous)" in result.en and "按行连续存放" in result.zh
        assert "transposed" in result.tried[0] and "strides (1, 4)" in result.got[0] and "步长 (3, 1)" in result.expected[1]


def test_lab11_1_real_kernel_in_torch_ops_keeping_the_layout_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(kernel=lambda x: x / (1 + x.abs()), fake=torch.empty_like))
    assert "not laid out row by row" in result.en and "连续" in result.zh


@pytest.mark.parametrize("kernel", [lambda x: py_softsign(x.float()).to(x.dtype),
                                    lambda x: (x.float() / (1 + x.float().abs())).to(x.dtype).contiguous()],
                         ids=["py_softsign", "torch"])
def test_lab11_1_float32_arithmetic_on_float64_inputs_is_named(kernel):
    result = expect_wrong("lab11.1", softsign_op_maker(kernel=kernel))
    assert "only float32 precision" in result.en and "float32 的精度" in result.zh and "float64" in result.tried[0]


def test_lab11_1_0d_float64_coming_back_as_float32_is_named():
    def kernel(x):
        return torch.tensor(x.item() / (1 + abs(x.item()))) if x.dim() == 0 else py_softsign(x)
    result = expect_wrong("lab11.1", softsign_op_maker(kernel=kernel))
    assert "returns a torch.float32 tensor for a torch.float64 input" in result.en and "默认是 float32" in result.zh
    assert "0-d float64" in result.tried[0] and result.expected == "torch.float64"


def test_lab11_1_fake_output_requiring_grad_is_named():
    result = expect_wrong("lab11.1", softsign_op_maker(
        fake=lambda x: torch.empty(x.shape, dtype=x.dtype, device=x.device, requires_grad=True)))
    assert "requires grad" in result.en and "要求梯度" in result.zh


def test_lab11_1_fake_output_requiring_grad_with_its_input_is_named():
    """The attackers' answer: requires_grad=x.requires_grad; only an input requiring grad shows it."""
    result = expect_wrong("lab11.1", softsign_op_maker(
        fake=lambda x: x.new_empty(x.shape, requires_grad=x.requires_grad)))
    assert "requires grad" in result.en and "要求梯度" in result.zh
    assert "requires grad" in result.tried[0] and "要求梯度" in result.tried[1]
    assert "requires_grad=True" in result.got[0] and "requires_grad=False" in result.expected[0]


@pytest.mark.parametrize("mutates_args", [("x",), "unknown"], ids=["x", "unknown"])
def test_lab11_1_declaring_a_mutation_that_does_not_happen_is_named(mutates_args):
    result = expect_wrong("lab11.1", softsign_op_maker(mutates_args=mutates_args))
    assert "writing into its input" in result.en and "改写它的输入" in result.zh and "(a0!)" in result.got


def test_lab11_1_a_python_function_around_the_op_is_named_truthfully():
    result = expect_wrong("lab11.1", softsign_op_maker(returns="wrapper"))
    assert "not a Python function around it" in result.en and "包着它的 Python 函数" in result.zh
    assert "breaks" not in result.en


_KEPT_LIBRARIES = []


def library_maker(freed):
    """The torch.library.Library route; ``freed`` names the part registered through a Library kept only
    in a local variable (freed when make_softsign_op returns): "all", "impl", "fake" or "" (none)."""
    def make_softsign_op(name):
        namespace, op_name = name.split("::")
        kept = torch.library.Library(namespace, "FRAGMENT")
        _KEPT_LIBRARIES.append(kept)
        local = torch.library.Library(namespace, "FRAGMENT")
        (local if freed == "all" else kept).define(op_name + "(Tensor x) -> Tensor")
        (local if freed in ("all", "impl") else kept).impl(op_name, py_softsign, "CPU")
        torch.library.register_fake(name, lambda x: x.new_empty(x.shape),
                                    lib=local if freed in ("all", "fake") else kept)
        return getattr(getattr(torch.ops, namespace), op_name)
    return make_softsign_op


def test_lab11_1_library_kept_alive_passes():
    expect_passed("lab11.1", library_maker(""))


def test_lab11_1_op_defined_through_a_freed_library_is_named_without_crashing():
    """The attackers' answer: a Library in a local variable is freed as the function returns, which
    unregisters the op; calling the stale operator object then crashed the process (segfault) when
    another lab11.1 check had run before. Checked twice, after a passing check, in this process."""
    expect_passed("lab11.1", solution("lab11", "make_softsign_op"))
    for _ in range(2):
        result = expect_wrong("lab11.1", library_maker("all"))
        assert "no longer registered" in result.en and "Library" in result.en and "module-level" in result.en
        assert "不再处于注册状态" in result.zh and "模块级变量" in result.zh


def test_lab11_1_real_kernel_registered_through_a_freed_library_is_named():
    result = expect_wrong("lab11.1", library_maker("impl"))
    assert "no real kernel for CPU tensors" in result.en and "keep that object alive" in result.en
    assert "没有处理 CPU 张量的真实内核" in result.zh and "一直存活" in result.zh


def test_lab11_1_fake_kernel_registered_through_a_freed_library_is_named():
    result = expect_wrong("lab11.1", library_maker("fake"))
    assert "no fake kernel" in result.en and "keep that object alive" in result.en
    assert "没有 fake 内核" in result.zh and "一直存活" in result.zh


def test_lab11_1_define_impl_returning_the_impl_decorators_result_is_named():
    """torch.library.impl used as a decorator returns None: the learner's name is bound to None."""
    result = expect_wrong("lab11.1", define_and_impl("impl"))
    assert "returned None" in result.en and "torch.ops.<namespace>.<name>" in result.en and "None" in result.zh


# -- exercise 2 mistakes --------------------------------------------------------------------

def test_lab11_2_one_window_short_is_named():
    result = expect_wrong("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], (x.shape[-1] - size) // step, size)))
    assert "one short" in result.en and "少了一个" in result.zh


def test_lab11_2_rounding_up_is_named():
    import math

    def fake(x, size, step):
        return x.new_empty((*x.shape[:-1], math.ceil((x.shape[-1] - size) / step) + 1, size))
    result = expect_wrong("lab11.2", fake)
    assert "rounds up" in result.en and "向上取整" in result.zh


def test_lab11_2_ignoring_the_window_size_is_named():
    result = expect_wrong("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], x.shape[-1] // step, size)))
    assert "ignores the window size" in result.en and "窗口大小" in result.zh


def test_lab11_2_losing_the_leading_dims_is_named():
    result = expect_wrong("lab11.2", lambda x, size, step: x.new_empty(((x.shape[-1] - size) // step + 1, size)))
    assert "leading dimensions" in result.en and "前面的维度" in result.zh


@pytest.mark.parametrize("count", [lambda n, size, step: -(-n // step) - (size - 1) // step,
                                   lambda n, size, step: (n + step - 1) // step - (size - 1) // step],
                         ids=["ceil-minus", "plus-step-minus"])
def test_lab11_2_counting_starts_then_removing_too_few_is_named(count):
    """The attackers' count: right on every earlier probe, wrong for (5,), size 2, step 2 (3 instead of 2)."""
    result = expect_wrong("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], count(x.shape[-1], size, step),
                                                                         size)))
    assert "takes off too few" in result.en and "减去的个数不够" in result.zh
    assert "(2, 5)" in result.tried[0] and "shape (2, 2, 2)" in result.expected[0] and "shape (2, 3, 2)" in result.got[0]


def test_lab11_2_default_dtype_is_named():
    def fake(x, size, step):
        return torch.empty(*x.shape[:-1], (x.shape[-1] - size) // step + 1, size)
    result = expect_wrong("lab11.2", fake)
    assert "wrong dtype" in result.en and "float64" in result.expected and "dtype 不对" in result.zh


def test_lab11_2_running_the_real_kernel_on_values_is_named():
    def fake(x, size, step):
        count = int((x.sum() * 0).item()) + (x.shape[-1] - size) // step + 1
        return x.new_empty((*x.shape[:-1], count, size))
    result = expect_wrong("lab11.2", fake)
    assert "reads the tensor's values" in result.en and "没有数值" in result.zh


def test_lab11_2_returning_the_unfold_view_is_named():
    result = expect_wrong("lab11.2", lambda x, size, step: x.unfold(-1, size, step))
    assert "returns its input, or a view of it" in result.en and "输入的视图" in result.zh


def test_lab11_2_contiguous_view_aliases_the_input_with_one_window():
    """.contiguous() of an unfold whose windows already lie row by row (one window per row) is the
    view itself: still an alias of x."""
    result = expect_wrong("lab11.2", lambda x, size, step: x.unfold(-1, size, step).contiguous())
    assert "returns its input, or a view of it" in result.en and "one window" in result.tried[0]


def test_lab11_2_empty_like_of_the_view_keeps_a_transposed_layout():
    result = expect_wrong("lab11.2", lambda x, size, step: torch.empty_like(x.unfold(-1, size, step)))
    assert "memory layout (strides)" in result.en and "步长" in result.zh and "transposed" in result.tried[0]


def test_lab11_2_transposed_output_is_named_as_a_layout_mistake():
    def fake(x, size, step):
        return x.new_empty((*x.shape[:-1], size, (x.shape[-1] - size) // step + 1)).transpose(-1, -2)
    result = expect_wrong("lab11.2", fake)
    assert "memory layout (strides)" in result.en and "内存布局" in result.zh


def test_lab11_2_fake_on_the_default_device_is_named():
    def fake(x, size, step):
        return torch.empty((*x.shape[:-1], (x.shape[-1] - size) // step + 1, size), dtype=x.dtype)
    result = expect_wrong("lab11.2", fake)
    assert "input's device" in result.en and "设备" in result.zh and "'meta' device" in result.tried[0]


@pytest.mark.parametrize("make", [
    lambda x, size, step: x.new_empty((*x.shape[:-1], (x.shape[-1] - size) // step + 1, size),
                                      requires_grad=x.requires_grad),
    lambda x, size, step: torch.empty((*x.shape[:-1], (x.shape[-1] - size) // step + 1, size), dtype=x.dtype,
                                      device=x.device).requires_grad_(x.requires_grad),
], ids=["new_empty", "requires_grad_"])
def test_lab11_2_fake_output_requiring_grad_with_its_input_is_named(make):
    """The attackers' answer: only an input that requires grad shows it (opcheck's test_faketensor fails)."""
    result = expect_wrong("lab11.2", make)
    assert "requires grad" in result.en and "要求梯度" in result.zh
    assert "requiring grad" in result.tried[0] and "要求梯度" in result.tried[1]


def test_lab11_2_fake_that_fails_on_a_transposed_input_is_named():
    def fake(x, size, step):
        return x.view(-1).new_empty((*x.shape[:-1], (x.shape[-1] - size) // step + 1, size))
    result = expect_wrong("lab11.2", fake)
    assert "fake kernel raised an error" in result.en and "非连续张量" in result.zh and "transposed" in result.tried[0]


def test_lab11_2_the_real_kernel_never_returns_a_view():
    """A custom op's output must not alias its input: the lab's real kernel copies even for one window."""
    x = torch.randn(4, 7)
    out = windows_real(x, 7, 3)
    assert out.is_contiguous() and out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


# -- exercise 3 mistakes --------------------------------------------------------------------

def test_lab11_3_forgetting_s_is_named():
    result = expect_wrong("lab11.3", autograd_adder(grad_of=lambda grad, x, s: grad * 3 * x ** 2))
    assert "scale s" in result.en and "缩放因子 s" in result.zh


def test_lab11_3_ignoring_the_incoming_gradient_is_named():
    result = expect_wrong("lab11.3", autograd_adder(grad_of=lambda grad, x, s: 3 * s * x ** 2))
    assert "chain rule" in result.en and "链式法则" in result.zh


def test_lab11_3_missing_the_factor_three_is_named():
    result = expect_wrong("lab11.3", autograd_adder(grad_of=lambda grad, x, s: grad * s * x ** 2))
    assert "factor 3" in result.en and "因子 3" in result.zh


def test_lab11_3_saving_the_output_instead_of_the_input_is_named():
    result = expect_wrong("lab11.3", autograd_adder(save_output=True))
    assert "output where it needs the input" in result.en and "setup_context" in result.zh


def test_lab11_3_one_gradient_for_two_inputs_is_named():
    result = expect_wrong("lab11.3", autograd_adder(returns=1))
    assert "one gradient per input" in result.en and "每个输入" in result.zh


def test_lab11_3_registering_on_another_op_is_named():
    def add_autograd(op):
        other = torch.library.custom_op("mylab_t::cube_other", mutates_args=())(_cube_kernel)
        autograd_adder()(other)
    result = expect_wrong("lab11.3", add_autograd)
    assert "no backward formula" in result.en and "没有注册反向传播公式" in result.zh


_GLOBAL_STATE = {}


def _setup_into_global(ctx, inputs, output, state):
    _GLOBAL_STATE["x"], _GLOBAL_STATE["s"] = inputs


def _setup_into_closure(ctx, inputs, output, state):
    state["x"], state["s"] = inputs


def _setup_s_into_global(ctx, inputs, output, state):
    ctx.save_for_backward(inputs[0])
    _GLOBAL_STATE["s"] = inputs[1]


def _backward_reading_s_from_global(ctx, grad, state):
    (x,) = ctx.saved_tensors
    return grad * 3 * _GLOBAL_STATE["s"] * x ** 2, None


@pytest.mark.parametrize("answer", [
    autograd_with_state(_setup_into_global, lambda ctx, grad, state: (grad * 3 * _GLOBAL_STATE["s"]
                                                                      * _GLOBAL_STATE["x"] ** 2, None)),
    autograd_with_state(_setup_into_closure, lambda ctx, grad, state: (grad * 3 * state["s"] * state["x"] ** 2, None)),
    autograd_with_state(_setup_s_into_global, _backward_reading_s_from_global),
], ids=["global", "closure", "s-only"])
def test_lab11_3_state_kept_outside_ctx_is_named(answer):
    result = expect_wrong("lab11.3", answer)
    assert "outside ctx" in result.en and "ctx 之外" in result.zh and "y2 = op(x2" in result.tried[0]


def test_lab11_3_x_kept_on_ctx_without_save_for_backward_is_named():
    def setup(ctx, inputs, output, state):
        ctx.x, ctx.s = inputs
    result = expect_wrong("lab11.3", autograd_with_state(setup, lambda ctx, grad, state: (grad * 3 * ctx.s * ctx.x ** 2,
                                                                                           None)))
    assert "save_for_backward" in result.en and "原地修改" in result.zh and "x.add_" in result.tried[0]


def test_lab11_3_writing_into_the_incoming_gradient_is_named():
    def backward(ctx, grad, state):
        (x,) = ctx.saved_tensors
        grad *= 3 * ctx.s * x * x
        return grad, None
    result = expect_wrong("lab11.3", autograd_with_state(_save_x_keep_s, backward))
    assert "writes into the gradient it receives" in result.en and "原地改写" in result.zh


def test_lab11_3_float32_gradient_for_float64_x_is_named():
    result = expect_wrong("lab11.3", autograd_adder(grad_of=lambda grad, x, s: (grad * 3 * s * x * x).float()))
    assert "only float32 precision" in result.en and "float32 的精度" in result.zh


def test_lab11_3_float32_local_derivative_is_named():
    result = expect_wrong("lab11.3", autograd_adder(grad_of=lambda grad, x, s: grad * (3 * s * x.float() ** 2)))
    assert "only float32 precision" in result.en and "x 的 dtype" in result.zh


def _square_saved_in_place(ctx, grad, state):
    (x,) = ctx.saved_tensors
    x **= 2
    return grad * 3 * ctx.s * x, None


def _mul_saved_in_place(ctx, grad, state):
    (x,) = ctx.saved_tensors
    return grad * x.mul_(x).mul_(3 * ctx.s), None


@pytest.mark.parametrize("backward", [_square_saved_in_place, _mul_saved_in_place], ids=["pow-assign", "mul_"])
def test_lab11_3_backward_writing_into_the_saved_x_is_named(backward):
    """The attackers' answer: the gradient is right, but the caller's x is squared by the backward."""
    result = expect_wrong("lab11.3", autograd_with_state(_save_x_keep_s, backward))
    assert "writes into a tensor it saved" in result.en and "保存的张量" in result.zh
    assert "x unchanged" in result.expected[0] and "x:" in result.got[0] and "x：" in result.got[1]


def test_lab11_3_backward_writing_into_a_saved_copy_is_named():
    """Writing into a saved clone leaves x alone, but a second backward through the graph fails."""
    def setup(ctx, inputs, output, state):
        ctx.save_for_backward(inputs[0].clone())
        ctx.s = inputs[1]

    def backward(ctx, grad, state):
        (x,) = ctx.saved_tensors
        return grad * x.mul_(x) * 3 * ctx.s, None
    result = expect_wrong("lab11.3", autograd_with_state(setup, backward))
    assert "second backward through the same graph" in result.en and "第二次反向传播" in result.zh
    assert "gradcheck" in result.tried[0] and "modified by an inplace operation" in result.got


def test_lab11_3_saving_the_float_with_save_for_backward_is_named():
    def setup(ctx, inputs, output, state):
        ctx.save_for_backward(*inputs)
    result = expect_wrong("lab11.3", autograd_with_state(setup, _backward_from_two_saved))
    assert "setup_context raised an error" in result.en and "只接受张量" in result.zh


def test_lab11_3_a_gradient_for_s_is_named():
    result = expect_wrong("lab11.3", autograd_adder(returns="s"))
    assert "gradient for s" in result.en and "必须是 None" in result.zh


def test_lab11_3_gradients_in_a_list_are_named():
    result = expect_wrong("lab11.3", autograd_adder(returns="list"))
    assert "a tuple with one gradient per input" in result.en and "元组" in result.zh


def test_lab11_3_backward_that_fails_on_a_transposed_input_is_named():
    def backward(ctx, grad, state):
        (x,) = ctx.saved_tensors
        return (grad.view(-1) * 3 * ctx.s * x.view(-1) ** 2).view(x.shape), None
    result = expect_wrong("lab11.3", autograd_with_state(_save_x_keep_s, backward))
    assert "raised an error for this input" in result.en and "非连续" in result.zh and "transposed" in result.tried[0]


def test_lab11_3_an_untraceable_backward_is_named():
    def backward(ctx, grad, state):
        (x,) = ctx.saved_tensors
        local = torch.tensor([3 * ctx.s * v * v for v in x.flatten().tolist()], dtype=x.dtype).reshape(x.shape)
        return grad * local, None
    result = expect_wrong("lab11.3", autograd_with_state(_save_x_keep_s, backward))
    assert "traceable" in result.en and "追踪" in result.zh and "opcheck" in result.tried[0]


def _cube_kernel(x: torch.Tensor, s: float) -> torch.Tensor:
    return py_cube_scale(x, s)


def test_a_learner_rerunning_cells_can_register_the_same_names_again():
    """Re-running the lab's cells registers the same op names again; that must keep working."""
    make = solution("lab11", "make_softsign_op")
    first, second = make("mylab_t::rerun"), make("mylab_t::rerun")
    torch.testing.assert_close(torch.ops.mylab_t.rerun(torch.ones(2)), torch.full((2,), 0.5))
    add, op = solution("lab11", "add_autograd"), solution("lab11", "cube_scale")
    add(op)
    add(op)
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    op(x, 2.0).sum().backward()
    torch.testing.assert_close(x.grad, 6 * x.detach() ** 2)


def _save_s_as_float32_tensor(ctx, inputs, output, state):
    ctx.save_for_backward(inputs[0], torch.tensor(inputs[1]))


def _save_s_with_full(ctx, inputs, output, state):
    ctx.save_for_backward(inputs[0], torch.full((), inputs[1]))


@pytest.mark.parametrize("setup", [_save_s_as_float32_tensor, _save_s_with_full], ids=["tensor", "full"])
def test_lab11_3_s_kept_as_a_float32_tensor_is_named(setup):
    """The attackers' answer: torch.tensor(s) is float32; only an s with no exact float32 value shows it."""
    result = expect_wrong("lab11.3", autograd_with_state(setup, _backward_from_two_saved))
    assert "only float32 precision" in result.en and "torch.tensor(s)" in result.en
    assert "float32 的精度" in result.zh and "torch.tensor(s)" in result.zh and "s = 0.1" in result.tried[0]


def _save_output_keep_s(ctx, inputs, output, state):
    ctx.save_for_backward(output)
    ctx.s = inputs[1]


def _x_from_the_output(ctx, grad, state):
    (out,) = ctx.saved_tensors
    r = out / ctx.s
    x = r.sign() * r.abs() ** (1 / 3)
    return grad * 3 * ctx.s * x * x, None


def test_lab11_3_x_recovered_from_the_output_by_dividing_by_s_is_named():
    """The attackers' answer: x = cbrt(out / s) is nan when s = 0."""
    result = expect_wrong("lab11.3", autograd_with_state(_save_output_keep_s, _x_from_the_output))
    assert "s = 0.0" in result.tried[0] and "divides by s" in result.en and "除以 s" in result.zh
    assert "nan" in result.got


def _save_x_and_output(ctx, inputs, output, state):
    ctx.save_for_backward(inputs[0], output)


def _output_over_x(ctx, grad, state):
    x, out = ctx.saved_tensors
    return grad * torch.where(x == 0, torch.zeros_like(x), 3 * out / x), None


def test_lab11_3_output_divided_by_x_is_named_on_tiny_x():
    """The attackers' answer: 3 * out / x, guarded at x == 0, loses the gradient where out underflows."""
    result = expect_wrong("lab11.3", autograd_with_state(_save_x_and_output, _output_over_x))
    assert "1e-120" in result.tried[0] and "underflows" in result.en and "x itself" in result.en
    assert "下溢" in result.zh and "x 本身" in result.zh


# -- one language at a time ----------------------------------------------------------------------



@pytest.mark.parametrize("task_id, answer", [
    ("lab11.1", softsign_op_maker(with_fake=False)),
    ("lab11.1", softsign_op_maker(fake=lambda x: torch.empty_like(x))),
    ("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], (x.shape[-1] - size) // step, size))),
    ("lab11.2", lambda x, size, step: torch.empty_like(x.unfold(-1, size, step))),
    ("lab11.3", autograd_adder(grad_of=lambda grad, x, s: grad * s * x ** 2)),
    ("lab11.3", autograd_with_state(_setup_into_closure,
                                    lambda ctx, grad, state: (grad * 3 * state["s"] * state["x"] ** 2, None))),
    ("lab11.1", softsign_op_maker(kernel=lambda x: py_softsign(x.float()).to(x.dtype))),
    ("lab11.3", autograd_with_state(_save_x_keep_s, _square_saved_in_place)),
    ("lab11.3", autograd_adder(grad_of=lambda grad, x, s: (grad * 3 * s * x * x).float())),
], ids=["lab11.1", "lab11.1-strides", "lab11.2", "lab11.2-strides", "lab11.3", "lab11.3-state", "lab11.1-float32",
        "lab11.3-saved-written", "lab11.3-float32"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)


def test_lab11_1_a_formula_that_cancels_on_small_inputs_is_named():
    """sign(x) * (1 - 1/(1+|x|)) is softsign on paper, but 1e-8 and 1e-30 come back as 0 (round 4 of the attack)."""
    cancelling = softsign_op_maker(kernel=lambda x: (torch.sign(x) * (1 - 1 / (1 + x.abs()))).contiguous())
    result = expect_wrong("lab11.1", cancelling)
    assert "subtracts nearly equal numbers" in result.en and "几乎相等的数相减" in result.zh
    assert "small values" in result.tried or "小数值" in str(result.tried)


# -- round 5 of the attack: feedback that names the real cause ------------------------------------

def test_lab11_1_a_fake_named_like_the_op_is_explained():
    """`def softsign` twice: the second def (the fake) rebinds the name, and the fake is returned."""
    def make_softsign_op(name):
        @torch.library.custom_op(name, mutates_args=())
        def softsign(x: torch.Tensor) -> torch.Tensor:
            return py_softsign(x)

        @softsign.register_fake
        def softsign(x):  # noqa: F811 - the learner's mistake
            return x.new_empty(x.shape)
        return softsign

    result = expect_wrong("lab11.1", make_softsign_op)
    assert "plain Python function" in result.en and "rebinds the name" in result.en
    assert "重新绑定" in result.zh


def test_lab11_3_saving_the_inputs_tuple_is_explained():
    def setup(ctx, inputs, output, state):
        ctx.save_for_backward(inputs)
    result = expect_wrong("lab11.3", autograd_with_state(setup, _backward_from_two_saved))
    assert "save inputs[0], not inputs" in result.en and "inputs 这个元组本身也不是张量" in result.zh


def test_lab11_3_saving_x_data_is_named():
    def setup(ctx, inputs, output, state):
        ctx.save_for_backward(inputs[0].data)
        ctx.s = inputs[1]

    def backward(ctx, grad, state):
        (x,) = ctx.saved_tensors
        return grad * 3 * ctx.s * x * x, None
    result = expect_wrong("lab11.3", autograd_with_state(setup, backward))
    assert "x.data saved instead of x" in result.en and "保存的是 x.data" in result.zh

