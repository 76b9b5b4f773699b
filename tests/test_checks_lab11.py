"""Lab 11 checkers: reference answers pass, stubs are "not yet implemented", re-checking is safe,
and the common mistakes get their specific messages."""
from __future__ import annotations


import pytest
import torch

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint
from fxcourse.checks.lab11 import py_cube_scale, py_softsign


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- answers written another way ------------------------------------------------------------

def softsign_op_maker(fake=lambda x: torch.empty_like(x), with_fake=True, name_of=lambda name: name,
                      return_op=True):
    def make_softsign_op(name):
        op = torch.library.custom_op(name_of(name), mutates_args=())(_softsign_kernel)
        if with_fake:
            op.register_fake(fake)
        return op if return_op else py_softsign
    return make_softsign_op


def _softsign_kernel(x: torch.Tensor) -> torch.Tensor:
    return py_softsign(x)


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
            return (g, None) if returns == 2 else g
        op.register_autograd(backward, setup_context=setup_context)
    return add_autograd


@pytest.mark.parametrize("task_id, name", [
    ("lab11.1", "make_softsign_op"), ("lab11.2", "windows_fake"), ("lab11.3", "add_autograd"),
])
def test_reference_answers_pass(task_id, name):
    expect_passed(task_id, solution("lab11", name))


@pytest.mark.parametrize("task_id, answer", [
    ("lab11.1", softsign_op_maker(fake=lambda x: x.new_empty(x.shape))),
    ("lab11.2", windows_fake_other_way),
    ("lab11.3", autograd_adder(grad_of=lambda grad, x, s: 3 * s * x.pow(2) * grad)),
])
def test_answers_written_another_way_pass(task_id, answer):
    expect_passed(task_id, answer)


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
    assert "plain function" in result.en and "普通函数" in result.zh


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


# -- one language at a time ----------------------------------------------------------------------



@pytest.mark.parametrize("task_id, answer", [
    ("lab11.1", softsign_op_maker(with_fake=False)),
    ("lab11.2", lambda x, size, step: x.new_empty((*x.shape[:-1], (x.shape[-1] - size) // step, size))),
    ("lab11.3", autograd_adder(grad_of=lambda grad, x, s: grad * s * x ** 2)),
], ids=["lab11.1", "lab11.2", "lab11.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)
