"""Checkers of lab06 (Dynamo and bytecode): the reference answers from solutions/ pass, stubs are
not implemented, and each plausible wrong answer is rejected with its mistake named."""
from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint
from fxcourse.checks import task_ids
from fxcourse.checks.lab06 import PUZZLES, graphs_and_breaks, puzzle_input

TASKS = ["lab06.1", "lab06.2", "lab06.3", "lab06.4"]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


@pytest.mark.parametrize("task_id, name", [
    ("lab06.1", "predict"), ("lab06.2", "guard_inputs"), ("lab06.3", "cache_sizes"),
    ("lab06.4", "resume_names"),
])
def test_reference_answers_pass(task_id, name):
    expect_passed(task_id, solution("lab06", name))


@pytest.mark.parametrize("task_id", TASKS)
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


@pytest.mark.parametrize("task_id", TASKS)
def test_every_task_has_a_hint_ladder_without_code(task_id):
    assert task_id in task_ids()
    steps = [hint(task_id, level=i) for i in (1, 2)]
    assert all(s.count >= 2 and s.en and s.zh for s in steps)
    assert "lecture" in steps[1].en.lower() and "讲" in steps[1].zh


def test_counts_come_from_torch_and_count_a_break_with_no_graph_before_it():
    assert graphs_and_breaks(PUZZLES["f5"], puzzle_input())[:2] == (1, 1)
    graphs, breaks, where = graphs_and_breaks(PUZZLES["f6"], puzzle_input())
    assert (graphs, breaks) == (3, 2)
    assert [line for line, _ in where] == ["scale = x.abs().max().item()", 'print("scaled")']


# -- exercise 1 --------------------------------------------------------------------------

def _predict(**changes):
    wrong = {**solution("lab06", "predict")(), **changes}
    return lambda: wrong


def test_lab06_1_a_shape_branch_is_not_a_break():
    result = expect_wrong("lab06.1", _predict(f3=(2, 1)))
    assert "1 of 6" in result.en and "f3 (graphs too high, breaks too high)" in result.en
    assert "guard on the size" in result.en and "对尺寸加一个守卫" in result.zh
    assert result.got == "f3: (2, 1)"


def test_lab06_1_breaks_counted_as_graphs_minus_one():
    result = expect_wrong("lab06.1", _predict(f5=(1, 0)))
    assert "f5 (breaks too low)" in result.en and "still a break" in result.en
    assert "f5（中断数量偏少）" in result.zh and "中断仍然是中断" in result.zh


def test_lab06_1_item_not_seen_as_a_break():
    result = expect_wrong("lab06.1", _predict(f6=(2, 1)))
    assert ".item()" in result.en and ".item()" in result.zh
    assert "(2, 1)" in result.got


def test_lab06_1_feedback_never_states_the_right_counts():
    right = solution("lab06", "predict")()
    result = expect_wrong("lab06.1", lambda: {name: (9, 9) for name in PUZZLES})
    text = result.to_text()
    assert "6 of 6" in result.en
    assert not any(str(pair) in text for pair in right.values())


def test_lab06_1_malformed_predictions():
    partial = {k: v for k, v in solution("lab06", "predict")().items() if k != "f4"}
    result = expect_wrong("lab06.1", lambda: partial)
    assert "missing: f4" in result.en and "缺少：f4" in result.zh
    result = expect_wrong("lab06.1", _predict(f1=(1.0, 0)))
    assert "two ints" in result.en and "两个整数" in result.zh


# -- exercise 2 --------------------------------------------------------------------------

def _guards(**changes):
    right = solution("lab06", "guard_inputs")()
    return lambda: {**right, **changes}


def test_lab06_2_passes_with_a_new_factor_fails_int_specialization():
    result = expect_wrong("lab06.2", _guards(passes=(torch.randn(2, 3), 5, "double")))
    assert "fails the guard on factor" in result.en and "specialized" in result.en
    assert "特化" in result.zh and "factor == 3" in result.got


def test_lab06_2_a_second_change_in_a_later_argument_is_caught():
    # mode is right to fail, but factor changed too; Dynamo itself reports only one failed guard
    result = expect_wrong("lab06.2", _guards(fails_on_mode=(torch.ones(2, 3), 4, "triple")))
    assert "fails the guard on factor as well" in result.en
    assert "也让 factor 的守卫失败了" in result.zh


def test_lab06_2_a_second_change_in_an_earlier_argument_is_caught():
    result = expect_wrong("lab06.2", _guards(fails_on_mode=(torch.ones(3, 3), 3, "triple")))
    assert "fails the guard on x as well" in result.en and "也让 x 的守卫失败了" in result.zh


def test_lab06_2_shared_tensor_changed_in_place_with_requires_grad():
    def answer():
        x = torch.ones(2, 3)
        return {"fails_on_x": (x.requires_grad_(), 3, "double"), "fails_on_factor": (x, 4, "double"),
                "fails_on_mode": (x, 3, "triple"), "passes": (torch.randn(2, 3), 3, "double")}
    result = expect_wrong("lab06.2", answer)
    assert "requires_grad_()" in result.en and "requires_grad_()" in result.zh and "shared" in result.en


def test_lab06_2_new_values_do_not_fail_tensor_match():
    result = expect_wrong("lab06.2", _guards(fails_on_x=(torch.zeros(2, 3), 3, "double")))
    assert "not the values" in result.en and "不检查数值" in result.zh


def test_lab06_2_passes_needs_new_values():
    result = expect_wrong("lab06.2", _guards(passes=(torch.ones(2, 3), 3, "double")))
    assert "same values" in result.en and "数值与第一次调用时相同" in result.zh


def test_lab06_2_errors_are_not_guard_failures():
    result = expect_wrong("lab06.2", _guards(fails_on_factor=(torch.ones(2, 3), "4", "double")))
    assert "raised an error" in result.en and "报错" in result.zh
    expect_wrong("lab06.2", lambda: {"fails_on_x": None})


def test_lab06_2_another_right_answer_passes():
    expect_passed("lab06.2", lambda: {
        "fails_on_x": (torch.ones(2, 3, dtype=torch.float64), 3, "double"),
        "fails_on_factor": (torch.ones(2, 3), 3.0, "double"),
        "fails_on_mode": (torch.ones(2, 3), 3, "half"),
        "passes": (torch.full((2, 3), 7.0), 3, "double"),
    })


# -- exercise 3 --------------------------------------------------------------------------

def _sizes(fn, calls, *, reset=True, code=lambda fn, compiled: fn.__code__, before=False):
    if reset:
        torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    sizes = []
    for args in calls:
        if before:
            sizes.append(len(_debug_get_cache_entry_list(code(fn, compiled))))
        compiled(*args)
        if not before:
            sizes.append(len(_debug_get_cache_entry_list(code(fn, compiled))))
    return sizes


def test_lab06_3_forgetting_reset_is_caught():
    result = expect_wrong("lab06.3", lambda fn, calls: _sizes(fn, calls, reset=False))
    assert "empty cache" in result.en and "空缓存" in result.zh
    assert result.expected == "[1, 1, 2, 3, 4]" and "_affine" in result.tried
    assert "reset()" not in result.en


def test_lab06_3_counting_the_wrapper_is_caught():
    result = expect_wrong("lab06.3", lambda fn, calls: _sizes(fn, calls, code=lambda fn, compiled: compiled))
    assert "every count is 0" in result.en and "包装函数" in result.zh


def test_lab06_3_counting_graphs_instead_of_entries_is_caught():
    def graph_counts(fn, calls):
        torch._dynamo.reset()
        graphs = []
        compiled = torch.compile(fn, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(graphs))
        return sizes

    result = expect_wrong("lab06.3", graph_counts)
    assert "graphs compiled for fn and its resume function" in result.en and "计算图数量" in result.zh
    assert "_halves" in result.tried


def test_lab06_3_counting_before_each_call_is_caught():
    result = expect_wrong("lab06.3", lambda fn, calls: _sizes(fn, calls, before=True))
    assert "one call late" in result.en and "晚了一次调用" in result.zh


def test_lab06_3_a_tuple_is_not_a_list():
    result = expect_wrong("lab06.3", lambda fn, calls: tuple(_sizes(fn, calls)))
    assert "list" in result.en and "list" in result.zh


# -- exercise 4 --------------------------------------------------------------------------

def _walk(fn, *args, recursive=True, code_names=True, ran_only=False, unique=False, order=sorted, reset=True,
          depth=None, entries=slice(None)):
    if reset:
        torch._dynamo.reset()
    torch.compile(fn, backend="eager")(*args)
    names, todo, seen, level = [], [fn.__code__], set(), {fn.__code__: 0}
    while todo:
        code = todo.pop()
        if depth is not None and level[code] >= depth:
            continue
        for entry in _debug_get_cache_entry_list(code)[entries]:
            for name in entry.code.co_names:
                if name.startswith("__resume_at") and name not in seen:
                    resume = fn.__globals__[name]
                    if ran_only and not _debug_get_cache_entry_list(resume.__code__):
                        continue
                    seen.add(name)
                    names.append(resume.__code__.co_name if code_names else name)
                    if recursive:
                        level[resume.__code__] = level[code] + 1
                        todo.append(resume.__code__)
    if unique:
        names = list(set(names))
    return order(names)


def test_lab06_4_not_following_resume_functions_is_caught():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, recursive=False))
    assert "first resume function" in result.en and "第一个恢复函数" in result.zh
    assert "_two_breaks" in result.tried


def test_lab06_4_global_names_instead_of_code_names_is_caught():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, code_names=False))
    assert "global names" in result.en and "全局变量名" in result.zh
    assert "co_name" not in result.en


def test_lab06_4_only_resume_functions_that_ran_is_caught():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, ran_only=True))
    assert "each branch" in result.en and "每个分支" in result.zh and "_branchy" in result.tried


def test_lab06_4_dropping_duplicate_names_is_caught():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, unique=True, order=sorted))
    assert "share one code name" in result.en and "同名" in result.zh


def test_lab06_4_unsorted_names_are_caught():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, order=lambda n: sorted(n, reverse=True)))
    assert "sorted as strings" in result.en and "sorted() 给出的顺序" in result.zh


def test_lab06_4_another_right_answer_passes():
    from fxcourse.viewers._dynamo_cache import walk

    def via_walk(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        return sorted(frame.name for frame in walk(fn)[1:])
    expect_passed("lab06.4", via_walk)


def test_lab06_1_pairs_as_lists_pass():
    right = solution("lab06", "predict")()
    expect_passed("lab06.1", lambda: {name: list(pair) for name, pair in right.items()})


def test_lab06_3_another_right_answer_passes():
    def by_function(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        counts = []
        for args in calls:
            compiled(*args)
            counts.append(len(_debug_get_cache_entry_list(fn)))  # the function stands for its code object
        return counts
    expect_passed("lab06.3", by_function)


# -- found by an adversarial review: near-misses a learner writes ---------------------------------

def test_lab06_3_resetting_before_every_call_is_named():
    def reset_each_time(fn, calls):
        sizes = []
        for args in calls:
            torch._dynamo.reset()
            torch.compile(fn, backend="eager")(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    result = expect_wrong("lab06.3", reset_each_time)
    assert "every count is 1" in result.en and "每个计数都是 1" in result.zh
    assert result.got == "[1, 1, 1, 1, 1]"


def test_lab06_3_counting_the_resume_functions_entries_is_named():
    from fxcourse.viewers._dynamo_cache import walk

    def with_resume(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(sum(len(frame.entries) for frame in walk(fn)))
        return sizes
    result = expect_wrong("lab06.3", with_resume)
    assert "compiled for the resume function as well" in result.en and "恢复函数编译的内容也算进去" in result.zh
    assert "_halves" in result.tried and "earlier compile" not in result.en  # not blamed on a stale cache


def test_lab06_3_counting_every_resume_global_of_the_module_is_named():
    def module_resumes_too(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)) + sum(
                len(_debug_get_cache_entry_list(value.__code__)) for name, value in fn.__globals__.items()
                if name.startswith("__resume_at")))
        return sizes
    result = expect_wrong("lab06.3", module_resumes_too)
    assert "resume function too" in result.en and "恢复函数的缓存条目也算进去" in result.zh
    assert "_halves" in result.tried and "earlier compile" not in result.en


def test_lab06_3_a_new_compile_for_each_call_passes():
    def compile_each_call(fn, calls):
        torch._dynamo.reset()
        sizes = []
        for args in calls:
            torch.compile(fn, backend="eager")(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    expect_passed("lab06.3", compile_each_call)


def test_lab06_4_fns_own_name_is_named():
    result = expect_wrong("lab06.4", lambda fn, *args: sorted(_walk(fn, *args) + [fn.__code__.co_name]))
    assert "own code name" in result.en and "自己的代码名" in result.zh and "_no_break" in result.tried


def test_lab06_4_every_resume_global_of_the_module_is_named():
    from fxcourse.checks import lab06

    torch.compile(lab06._one_break, backend="eager")(torch.ones(2))  # leaves a resume function in the module
    torch._dynamo.reset()

    def every_global(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        return sorted(value.__code__.co_name for name, value in fn.__globals__.items()
                      if name.startswith("__resume_at"))
    result = expect_wrong("lab06.4", every_global)
    assert "other functions" in result.en and "其他函数的恢复函数" in result.zh and "_no_break" in result.tried


# -- one language at a time ----------------------------------------------------------------------
ONE_WRONG_ANSWER = {
    "lab06.1": _predict(f3=(2, 1)),
    "lab06.2": _guards(passes=(torch.randn(2, 3), 5, "double")),
    "lab06.3": lambda fn, calls: tuple(_sizes(fn, calls)),
    "lab06.4": lambda fn, *args: tuple(_walk(fn, *args)),
}


def test_every_lab06_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab06.")]


@pytest.mark.parametrize("task_id", sorted(ONE_WRONG_ANSWER))
def test_lab06_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, ONE_WRONG_ANSWER[task_id], monkeypatch)


# -- issue 30: the caller's settings, the reset the checker cannot do for you, sorted order ---------

def test_lab06_3_dynamic_false_is_named():
    def static(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager", dynamic=False)
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    result = expect_wrong("lab06.3", static)
    assert "as with dynamic=False" in result.en and "就像 dynamic=False" in result.zh


def test_lab06_3_dynamic_true_is_named():
    def symbolic(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager", dynamic=True)
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    result = expect_wrong("lab06.3", symbolic)
    assert "as with dynamic=True" in result.en and "就像 dynamic=True" in result.zh


def test_lab06_3_counting_argument_signatures_is_named():
    def by_signature(fn, calls):
        seen, sizes = set(), []
        for args in calls:
            seen.add(tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args))
            sizes.append(len(seen))
        return sizes
    result = expect_wrong("lab06.3", by_signature)
    assert "distinct argument shapes and dtypes" in result.en and "不同参数形状与 dtype 组合的个数" in result.zh


def test_lab06_4_forgetting_the_reset_is_named():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, reset=False))
    assert "Reset Dynamo before you compile fn" in result.en and "请在编译 fn 之前先重置 Dynamo" in result.zh


def test_lab06_4_names_in_discovery_order_are_named():
    # every chain of breaks is discovered in line order; line 9 before line 11 is not sorted as strings
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, order=list))
    assert "not in the order asked for" in result.en and "按字符串排序" in result.zh
    assert "_far_breaks" in result.tried


def test_lab06_4_a_breadth_first_search_passes():
    def breadth_first(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        found, queue = {}, [fn.__code__]
        while queue:
            code = queue.pop(0)
            for entry in _debug_get_cache_entry_list(code):
                for name in entry.code.co_names:
                    if name.startswith("__resume_at") and name not in found:
                        found[name] = fn.__globals__[name].__code__
                        queue.append(found[name])
        return sorted(code.co_name for code in found.values())
    expect_passed("lab06.4", breadth_first)


def test_lab06_4_a_search_by_code_object_passes_too():
    # finding 3 of the independent attack: two __resume_at_* globals can hold one code object (_recurses);
    # the task now says listing it once per name or once per code object are both accepted
    def breadth_first_by_code_object(fn, *args):
        torch.compiler.reset()
        torch.compile(fn, backend="eager")(*args)
        found, queue = {}, [fn.__code__]
        while queue:
            code = queue.pop(0)
            for entry in _debug_get_cache_entry_list(code):
                for name in entry.code.co_names:
                    resume = fn.__globals__[name].__code__ if name.startswith("__resume_at") else None
                    if resume is not None and id(resume) not in found:
                        found[id(resume)] = resume
                        queue.append(resume)
        return sorted(code.co_name for code in found.values())
    expect_passed("lab06.4", breadth_first_by_code_object)


def test_lab06_4_a_search_that_never_skips_a_visited_code_object_is_named():
    def no_seen_set(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        names, todo = [], [fn.__code__]
        while todo:
            for entry in _debug_get_cache_entry_list(todo.pop()):
                for name in entry.code.co_names:
                    if name.startswith("__resume_at"):
                        names.append(fn.__globals__[name].__code__.co_name)
                        todo.append(fn.__globals__[name].__code__)
        return sorted(names)
    result = expect_wrong("lab06.4", no_seen_set)
    assert "Remember the __resume_at_* names (or the code objects) you have already followed" in result.en
    assert "记住已经跟随过的 __resume_at_* 名字（或代码对象）" in result.zh
    assert "_recurses" in result.tried


def test_lab06_4_calling_fn_with_its_first_argument_only_is_named():
    reference = solution("lab06", "resume_names")
    result = expect_wrong("lab06.4", lambda fn, *args: reference(fn, args[0]))
    assert "first argument alone" in result.en and "只用第一个参数调用" in result.zh
    assert result.tried == "resume_names(_two_args, torch.ones(2, 3), 2)"


# -- found by a second adversarial review -----------------------------------------------------------

def test_lab06_4_following_the_chain_only_two_deep_is_named():
    # fn's entries and its first resume function's: enough for two breaks, not for four
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, depth=2))
    assert "however deep the chain goes" in result.en and "无论这条链有多深" in result.zh
    assert "_four_breaks" in result.tried


def test_lab06_4_following_the_chain_three_deep_is_named():
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, depth=3))
    assert "several breaks" in result.en and "多次中断" in result.zh and "_four_breaks" in result.tried


def test_lab06_4_a_recursive_walk_passes():
    def recursive(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        found = {}

        def visit(code):
            for entry in _debug_get_cache_entry_list(code):
                for name in entry.code.co_names:
                    if name.startswith("__resume_at") and name not in found:
                        found[name] = fn.__globals__[name]
                        visit(found[name].__code__)
        visit(fn.__code__)
        return sorted(f.__code__.co_name for f in found.values())
    expect_passed("lab06.4", recursive)


def test_lab06_1_numpy_integer_pairs_pass():
    import numpy as np
    right = solution("lab06", "predict")()
    expect_passed("lab06.1", lambda: {name: (np.int64(g), np.int64(b)) for name, (g, b) in right.items()})


# -- issue 30, third attack: deeper chains, several cache entries on one code object, feedback that names ----

@pytest.mark.parametrize("depth", [5, 6])
def test_lab06_4_a_walk_of_fixed_depth_beyond_four_is_named(depth):
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, depth=depth))
    assert "however deep the chain goes" in result.en and "无论这条链有多深" in result.zh
    assert "_seven_breaks" in result.tried


@pytest.mark.parametrize("entries", [slice(0, 1), slice(-1, None)], ids=["first", "last"])
def test_lab06_4_one_cache_entry_per_code_object_is_named(entries):
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, entries=entries))
    assert "Look in every cache entry of each code object" in result.en
    assert "都要查看它的所有缓存条目" in result.zh and "三个缓存条目" in result.zh
    assert "_calls_itself" in result.tried


def _guards_with(**changes):
    right = solution("lab06", "guard_inputs")()
    return lambda: {**right, **changes}


def test_lab06_2_a_list_as_x_in_passes_recompiles_with_no_graph_and_is_named():
    # scale on a list traces no tensor op: the recompile adds no graph, and the checker still sees it
    result = expect_wrong("lab06.2", _guards_with(passes=([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 3, "double")))
    assert "passes made the call recompile" in result.en and "yours is of type list" in result.en
    assert "也检查类型" in result.zh and "list 类型的值" in result.zh and "TENSOR_MATCH" not in result.en


def test_lab06_2_a_factor_equal_to_3_of_another_type_is_named():
    result = expect_wrong("lab06.2", _guards_with(passes=(torch.randn(2, 3), 3.0, "double")))
    assert "equal to 3, but of another type" in result.en and "与 3 相等，但类型不同" in result.zh
    assert "specialized" not in result.en


def test_lab06_2_arguments_in_another_order_are_named():
    result = expect_wrong("lab06.2", _guards_with(fails_on_factor=(4, torch.ones(2, 3), "double")))
    assert "(x, factor, mode)" in result.en and "顺序" in result.zh and "fails_on_factor" in result.en


def test_lab06_2_an_int_x_in_another_tuple_is_named_by_its_type():
    result = expect_wrong("lab06.2", _guards_with(fails_on_mode=(2, 3, "triple")))
    assert "fails the guard on x as well" in result.en and "yours is of type int" in result.en
    assert "int 类型的值" in result.zh


def test_lab06_2_more_right_answers_pass():
    expect_passed("lab06.2", lambda: {
        "fails_on_x": (torch.ones(3, 2).t(), 3, "double"),                     # same size, other stride
        "fails_on_factor": (torch.ones(2, 3), -3, "double"),
        "fails_on_mode": (torch.ones(2, 3), 3, None),
        "passes": (torch.arange(6.0).reshape(2, 3), 1 + 2, "".join(["dou", "ble"])),
    })


def _counts_of_signatures(dtypes):
    def answer(fn, calls):
        seen, sizes = set(), []
        for args in calls:
            seen.add(tuple((tuple(a.shape), a.dtype) if dtypes else tuple(a.shape) for a in args
                           if isinstance(a, torch.Tensor)))
            sizes.append(len(seen))
        return sizes
    return answer


def test_lab06_3_counting_shapes_only_is_named():
    result = expect_wrong("lab06.3", _counts_of_signatures(dtypes=False))
    assert "distinct argument shapes among the calls" in result.en and "不同参数形状的个数" in result.zh


def test_lab06_3_counting_tensor_signatures_without_the_int_is_named():
    result = expect_wrong("lab06.3", _counts_of_signatures(dtypes=True))
    assert "distinct argument shapes and dtypes" in result.en and "不同参数形状与 dtype 组合的个数" in result.zh


@pytest.mark.parametrize("dynamic", [False, True])
def test_lab06_3_other_settings_and_no_reset_name_both_mistakes(dynamic):
    def no_reset(fn, calls):
        compiled = torch.compile(fn, backend="eager", dynamic=dynamic)
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    result = expect_wrong("lab06.3", no_reset)
    assert f"as with dynamic={dynamic}" in result.en and f"就像 dynamic={dynamic}" in result.zh
    assert "earlier compile of fn" in result.en and "之前编译 fn 留下的条目" in result.zh


def test_lab06_3_the_final_count_for_every_call_is_named():
    def at_the_end(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        for args in calls:
            compiled(*args)
        return [len(_debug_get_cache_entry_list(fn.__code__))] * len(calls)
    result = expect_wrong("lab06.3", at_the_end)
    assert "after the last call" in result.en and "最后一次调用之后" in result.zh
    assert "earlier compile" not in result.en


def test_lab06_3_calling_fn_itself_is_named():
    def uncompiled(fn, calls):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            fn(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    result = expect_wrong("lab06.3", uncompiled)
    assert "compiled nothing" in result.en and "没有为 fn 编译任何东西" in result.zh
    assert "wrapper" not in result.en


def test_lab06_3_more_right_answers_pass():
    def compiler_reset(fn, calls):
        torch.compiler.reset()
        compiled = torch.compile(fn, backend="aot_eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(compiled._torchdynamo_orig_callable.__code__)))
        return sizes
    expect_passed("lab06.3", compiler_reset)
    compiled_list = lambda fn, calls: (torch._dynamo.reset(), [  # noqa: E731
        (c(*args), len(_debug_get_cache_entry_list(fn.__code__)))[1]
        for c in [torch.compile(fn, backend="eager")] for args in calls])[1]
    expect_passed("lab06.3", compiled_list)


# -- fix round after the independent attack (findings of lab06) -------------------------------------

def test_lab06_3_emptying_only_fns_code_object_is_named():
    # reset_code leaves Dynamo's memory of the sizes it saw: the first call is compiled dynamic at once
    def reset_the_code(fn, calls):
        torch._dynamo.reset_code(fn.__code__)
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes
    result = expect_wrong("lab06.3", reset_the_code)
    assert "still remembers the sizes" in result.en and "仍然记得之前编译 fn 时见过的尺寸" in result.zh
    assert "_affine" in result.tried and "dynamic=True" not in result.en
    assert result.got == "[1, 1, 1, 2, 3]"


def test_lab06_3_subtracting_the_entries_already_there_is_named():
    def baseline_subtracted(fn, calls):
        base = len(_debug_get_cache_entry_list(fn.__code__))
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)) - base)
        return sizes
    result = expect_wrong("lab06.3", baseline_subtracted)
    assert "subtracting the entries that were there" in result.en and "减去一开始就有的条目数" in result.zh
    assert "Dynamo was not reset" in result.en and "Dynamo 没有被重置" in result.zh
    assert "(ones(2, 3),)" in result.tried


def test_lab06_3_a_setting_left_changed_by_the_answer_is_named_and_put_back():
    def no_automatic_dynamic(fn, calls):
        torch._dynamo.config.automatic_dynamic_shapes = False
        return _sizes(fn, calls)
    before = torch._dynamo.config.get_config_copy()
    try:
        result = expect_wrong("lab06.3", no_automatic_dynamic)
        assert torch._dynamo.config.get_config_copy() == before
        assert "left them changed" in result.en and "并且没有恢复" in result.zh
        assert result.got == "torch._dynamo.config.automatic_dynamic_shapes: True -> False"
        expect_passed("lab06.3", solution("lab06", "cache_sizes"))
    finally:
        torch._dynamo.config.automatic_dynamic_shapes = before["automatic_dynamic_shapes"]


@pytest.mark.parametrize("task_id, name, setting", [
    ("lab06.1", "predict", {"capture_scalar_outputs": True}),
    ("lab06.2", "guard_inputs", {"assume_static_by_default": False}),
    ("lab06.3", "cache_sizes", {"automatic_dynamic_shapes": False}),
    ("lab06.4", "resume_names", {"recompile_limit": 1}),
])
def test_a_setting_the_notebook_changed_earlier_does_not_fail_the_reference(task_id, name, setting):
    with torch._dynamo.config.patch(**setting):
        before = torch._dynamo.config.get_config_copy()
        expect_passed(task_id, solution("lab06", name))
        assert torch._dynamo.config.get_config_copy() == before  # the notebook's settings are put back


def test_a_wrong_answer_says_the_notebook_changed_a_setting():
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        result = expect_wrong("lab06.1", _predict(f6=(1, 0)))
    assert "capture_scalar_outputs: True (default: False)" in result.en
    assert "你的笔记本修改了 Dynamo 的部分设置" in result.zh and "capture_scalar_outputs: True (default: False)" in result.zh


def test_lab06_1_pairs_given_as_breaks_then_graphs_are_named():
    swapped = {name: (b, g) for name, (g, b) in solution("lab06", "predict")().items()}
    result = expect_wrong("lab06.1", lambda: swapped)
    assert "wrong order" in result.en and "顺序反了" in result.zh
    assert "f2" in result.en and "f5" not in result.en  # f5's pair reads the same both ways


def test_lab06_1_functions_as_keys_are_named():
    right = solution("lab06", "predict")()
    result = expect_wrong("lab06.1", lambda: {PUZZLES[name]: pair for name, pair in right.items()})
    assert "function's name" in result.en and "函数名" in result.zh
    assert "0x" not in result.got and "<function f1>" in result.got


def test_lab06_2_a_view_at_another_storage_offset_is_named():
    right = solution("lab06", "guard_inputs")()
    inputs = {**right, "fails_on_x": (torch.ones(10)[4:].view(2, 3), 3, "double")}
    result = expect_wrong("lab06.2", lambda: inputs)
    assert "storage offset (4)" in result.en and "存储偏移（4）" in result.zh
    assert "not the values" in result.en and "only in its storage offset" in result.en
    assert "storage offset 4" in result.tried[0]
    assert ". The TENSOR_MATCH guard" in result.en


def test_lab06_2_sentences_after_a_full_stop_start_with_a_capital():
    right = solution("lab06", "guard_inputs")()
    for key, args in [("fails_on_factor", (torch.ones(2, 3), 3, "double")),
                      ("fails_on_mode", (torch.ones(2, 3), 3, "double"))]:
        result = expect_wrong("lab06.2", lambda: {**right, key: args})
        assert ". The guard on" in result.en
    result = expect_wrong("lab06.2", lambda: {**right, "passes": (torch.randn(2, 3), 3, "triple")})
    assert ". A string argument" in result.en


def test_lab06_4_resume_globals_picked_by_name_after_a_reset_are_named():
    def by_prefix(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        return sorted(v.__code__.co_name for k, v in fn.__globals__.items() if k.startswith("__resume_at")
                      and v.__code__.co_name.startswith(f"torch_dynamo_resume_in_{fn.__name__}_at"))
    result = expect_wrong("lab06.4", by_prefix)
    assert "though no old cache entry is left" in result.en and "尽管已经没有旧的缓存条目" in result.zh
    assert "Reset Dynamo before" not in result.en


def test_lab06_4_reading_fns_original_code_is_named():
    def original_code(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        return sorted(fn.__globals__[n].__code__.co_name for n in fn.__code__.co_names if n.startswith("__resume"))
    result = expect_wrong("lab06.4", original_code)
    assert "no resume function found" in result.en and "没有找到任何恢复函数" in result.zh
    assert "_one_break" in result.tried


def test_lab06_4_a_compiler_stance_left_changed_is_named_and_put_back():
    from torch._dynamo import eval_frame
    reference = solution("lab06", "resume_names")

    def leaves_a_stance(fn, *args):
        names = reference(fn, *args)
        torch.compiler.set_stance("force_eager")
        return names
    before = eval_frame._stance
    result = expect_wrong("lab06.4", leaves_a_stance)
    assert eval_frame._stance == before
    assert result.got == "torch.compiler stance: 'default' -> 'force_eager'"
    assert "leave Dynamo's settings alone" in result.en and "请不要改动 Dynamo 的设置" in result.zh


def _search_by_code(fn, *args, reset=True, reset_code=False):
    """A search that lists each resume code object once; the reset is optional (a learner may skip it)."""
    if reset:
        torch._dynamo.reset()
    if reset_code:
        torch._dynamo.reset_code(fn.__code__)
    torch.compile(fn, backend="eager")(*args)
    names, queue, seen = [], [fn.__code__], {id(fn.__code__)}
    while queue:
        code = queue.pop(0)
        for entry in _debug_get_cache_entry_list(code):
            for name in entry.code.co_names:
                if name.startswith("__resume_at") and id(fn.__globals__[name].__code__) not in seen:
                    resume = fn.__globals__[name].__code__
                    seen.add(id(resume))
                    names.append(resume.co_name)
                    queue.append(resume)
    return sorted(names)


def test_lab06_4_no_reset_with_a_search_by_code_object_is_named():
    # third attack: dedupe by code object hid the old entries until an earlier compile took another branch
    # (witness: _two_args compiled with k == 2, then resume_names(_two_args, x): 2 names instead of 1)
    result = expect_wrong("lab06.4", lambda fn, *args: _search_by_code(fn, *args, reset=False))
    assert "Reset Dynamo before you compile fn" in result.en and "请在编译 fn 之前先重置 Dynamo" in result.zh
    # the first probe whose stale entries reach another resume function names it
    assert "_breaks_in_both_branches, -torch.ones(2, 3)" in result.tried or "_two_args" in result.tried


def test_lab06_4_resetting_only_fns_code_is_named():
    result = expect_wrong("lab06.4", lambda fn, *args: _search_by_code(fn, *args, reset=False, reset_code=True))
    assert "reset_code" in result.en and "reset_code" in result.zh
    assert "resume functions keep theirs" in result.en and "恢复函数仍保留着各自的缓存" in result.zh


def test_lab06_4_a_numeric_sort_is_named_as_another_order():
    def by_line(names):
        return sorted(names, key=lambda n: int(n.rsplit("_", 1)[1]))
    result = expect_wrong("lab06.4", lambda fn, *args: _walk(fn, *args, order=by_line))
    assert "sorted as strings" in result.en and "按字符串排序" in result.zh


def test_lab06_3_numpy_integer_counts_pass():
    import numpy as np

    def as_numpy(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        counts = []
        for args in calls:
            compiled(*args)
            counts.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return list(np.array(counts))  # numpy.int64 items
    expect_passed("lab06.3", as_numpy)


def test_lab06_4_new_resume_globals_of_the_whole_module_are_named():
    # fourth attack: the globals a compile adds include the resume functions of a helper fn calls
    def globals_diff(fn, *args):
        torch._dynamo.reset()
        before = set(fn.__globals__)
        torch.compile(fn, backend="eager")(*args)
        return sorted(fn.__globals__[k].__code__.co_name for k in set(fn.__globals__) - before
                      if k.startswith("__resume_at"))
    result = expect_wrong("lab06.4", globals_diff)
    assert "_calls_a_helper" in result.tried
    assert "resume functions of other functions" in result.en and "其他函数的恢复函数" in result.zh


def test_lab06_4_searching_once_per_code_name_is_named():
    # fourth attack: two resume functions share a code name (one per branch); searching only the first misses
    # the resume function that follows the branch the call took
    def once_per_code_name(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        names, todo, searched = [], [fn.__code__], {fn.__code__.co_name}
        while todo:
            for entry in _debug_get_cache_entry_list(todo.pop(0)):
                for name in entry.code.co_names:
                    if name.startswith("__resume_at"):
                        code = fn.__globals__[name].__code__
                        names.append(code.co_name)
                        if code.co_name not in searched:
                            searched.add(code.co_name)
                            todo.append(code)
        return sorted(names)
    result = expect_wrong("lab06.4", once_per_code_name)
    assert "_breaks_in_both_branches" in result.tried


def test_lab06_3_marking_the_calls_dynamic_does_not_change_later_checks():
    # fourth attack: the answer marked the checker's own tensors, which later reference counts reused
    def mark_dyn(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        counts = []
        for args in calls:
            torch._dynamo.mark_dynamic(args[0], 0)
            compiled(*args)
            counts.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return counts

    def reset_code_only(fn, calls):
        torch._dynamo.reset_code(fn.__code__)
        compiled = torch.compile(fn, backend="eager")
        counts = []
        for args in calls:
            compiled(*args)
            counts.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return counts
    expect_wrong("lab06.3", mark_dyn)
    result = expect_wrong("lab06.3", reset_code_only)
    assert "cache emptied only for fn" in result.en and "只清空 fn 的缓存" in result.zh


def test_lab06_1_the_reference_passes_with_logging_disabled_in_the_notebook():
    # the course's own cells call logging.disable(logging.WARNING); the graph-break log must still be read
    import logging
    right = solution("lab06", "predict")
    logging.disable(logging.WARNING)
    try:
        expect_passed("lab06.1", right)
    finally:
        logging.disable(logging.NOTSET)


# -- found by the fifth attack -------------------------------------------------------------------

def _search_after(calls):
    """resume_names with the reset and compile of the reference, ``calls(compiled, args)`` in place of
    the one call, then the reference's search."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    def answer(fn, *args):
        torch._dynamo.reset()
        calls(torch.compile(fn, backend="eager"), args)
        names, todo, seen = [], [fn.__code__], set()
        while todo:
            code = todo.pop()
            for entry in _debug_get_cache_entry_list(code):
                for name in entry.code.co_names:
                    if name.startswith("__resume_at") and name not in seen:
                        seen.add(name)
                        names.append(fn.__globals__[name].__code__.co_name)
                        todo.append(fn.__globals__[name].__code__)
        return sorted(names)
    return answer


def test_lab06_4_a_second_call_after_the_first_is_named():
    def twice(compiled, args):
        compiled(*args)
        compiled(args[0])
    result = expect_wrong("lab06.4", _search_after(twice))
    assert "fn was called again" in result.en and "fn 又被调用过" in result.zh


def test_lab06_4_a_reset_after_the_call_is_named():
    def then_reset(compiled, args):
        compiled(*args)
        torch._dynamo.reset()
    result = expect_wrong("lab06.4", _search_after(then_reset))
    assert "a reset after the call" in result.en and "在调用之后重置" in result.zh


def test_lab06_2_an_inference_mode_tensor_is_named():
    with torch.inference_mode():
        x = torch.randn(2, 3)
    result = expect_wrong("lab06.2", _guards(passes=(x, 3, "double")))
    assert "dispatch keys" in result.en and "inference_mode" in result.en and "分发键" in result.zh


def test_lab06_2_a_sparse_x_is_shown_without_strides():
    result = expect_wrong("lab06.2", _guards(passes=(torch.ones(2, 3).to_sparse_csr(), 3, "double")))
    assert "sparse_csr" in result.tried[0] and "dispatch keys" in result.en


# -- found by the sixth attack (issue 30) --------------------------------------------------------

def test_lab06_1_settings_left_changed_do_not_shape_the_checkers_own_reference():
    # the reference counts used to be computed after the answer ran, under what it left changed, and kept
    def leaves_capture_on():
        torch._dynamo.config.capture_scalar_outputs = True
        return {name: graphs_and_breaks(fn, puzzle_input())[:2] for name, fn in PUZZLES.items()}

    import fxcourse.checks.lab06 as lab06

    lab06._FACTS.clear()
    try:
        result = expect_wrong("lab06.1", leaves_capture_on)
        assert "left them changed" in result.en
        assert not torch._dynamo.config.capture_scalar_outputs
        expect_passed("lab06.1", solution("lab06", "predict"))
        expect_wrong("lab06.1", lambda: {**solution("lab06", "predict")(), "f6": (2, 1)})
    finally:
        torch._dynamo.config.capture_scalar_outputs = False
        lab06._FACTS.clear()


def test_lab06_4_settings_left_changed_do_not_shape_the_checkers_own_reference():
    import fxcourse.checks.lab06 as lab06

    def leaves_a_limit(fn, *args):
        torch._dynamo.config.recompile_limit = 1
        return solution("lab06", "resume_names")(fn, *args)

    limit = torch._dynamo.config.recompile_limit
    lab06._NAMES.clear()
    try:
        expect_wrong("lab06.4", leaves_a_limit)
        expect_passed("lab06.4", solution("lab06", "resume_names"))
    finally:
        torch._dynamo.config.recompile_limit = limit
        lab06._NAMES.clear()


def test_lab06_4_searching_each_code_name_once_is_named():
    def by_code_name(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        names, todo, seen, searched = [], [fn.__code__], set(), set()
        while todo:
            code = todo.pop()
            if code.co_name in searched:
                continue
            searched.add(code.co_name)
            for entry in _debug_get_cache_entry_list(code):
                for name in entry.code.co_names:
                    if name.startswith("__resume_at") and name not in seen:
                        seen.add(name)
                        resume = fn.__globals__[name]
                        names.append(resume.__code__.co_name)
                        todo.append(resume.__code__)
        return sorted(names)

    result = expect_wrong("lab06.4", by_code_name)
    assert "_breaks_in_both_branches, torch.ones(2, 3)" in result.tried
    assert "not the code names" in result.en and "而不是代码名" in result.zh


def _reset_after(k):
    """cache_sizes that resets Dynamo before the first call and again right after call ``k`` (from 0)."""
    def cache_sizes(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        out = []
        for i, args in enumerate(calls):
            compiled(*args)
            out.append(len(_debug_get_cache_entry_list(fn.__code__)))
            if i == k:
                torch._dynamo.reset()
        return out
    return cache_sizes


def test_lab06_3_a_reset_after_the_first_call_is_caught():
    result = expect_wrong("lab06.3", _reset_after(0))
    assert "_shift" in result.tried and result.expected == "[1, 2, 2]"
    # it used to be told "as with dynamic=True": the answer compiled with the defaults
    assert "a reset of Dynamo between the calls" in result.en and "after call 1" in result.en
    assert "在两次调用之间重置 Dynamo" in result.zh


def test_lab06_3_a_reset_after_the_second_call_is_named():
    # it used to be told to reset Dynamo itself, which it did
    result = expect_wrong("lab06.3", _reset_after(1))
    assert "after call 2" in result.en and "reset empties the cache" in result.en


def test_lab06_3_a_reset_under_another_name_between_the_calls_is_named():
    from torch._dynamo import reset

    def aliased(fn, calls):
        reset()
        compiled = torch.compile(fn, backend="eager")
        out = []
        for i, args in enumerate(calls):
            compiled(*args)
            out.append(len(_debug_get_cache_entry_list(fn.__code__)))
            if i == 0:
                reset()
        return out

    result = expect_wrong("lab06.3", aliased)
    assert "a reset of Dynamo between the calls" in result.en and "after call 1" in result.en


def test_lab06_3_a_clean_up_reset_at_the_end_is_not_called_a_reset_between_calls():
    def marks_then_cleans_up(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        out = []
        for args in calls:
            if isinstance(args[0], torch.Tensor) and args[0].dim():
                torch._dynamo.mark_dynamic(args[0], 0)
            compiled(*args)
            out.append(len(_debug_get_cache_entry_list(fn.__code__)))
        torch._dynamo.reset()
        return out

    result = expect_wrong("lab06.3", marks_then_cleans_up)
    assert "between the calls" not in result.en


def test_lab06_3_dynamic_false_with_a_clean_up_reset_is_named_as_dynamic_false():
    def static_then_cleans_up(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager", dynamic=False)
        out = []
        for args in calls:
            compiled(*args)
            out.append(len(_debug_get_cache_entry_list(fn.__code__)))
        torch._dynamo.reset()
        return out

    result = expect_wrong("lab06.3", static_then_cleans_up)
    assert "as with dynamic=False" in result.en and "distinct" not in result.en


def test_lab06_2_changing_the_default_dtype_is_named_and_put_back():
    def float64_default():
        torch.set_default_dtype(torch.float64)
        return {**solution("lab06", "guard_inputs")(), "fails_on_x": (torch.ones(2, 3, dtype=torch.float32), 3,
                                                                       "double")}

    result = expect_wrong("lab06.2", float64_default)
    assert "default dtype" in result.en and "默认 dtype" in result.zh
    assert torch.get_default_dtype() == torch.float32
