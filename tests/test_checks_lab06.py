"""Checkers of lab06 (Dynamo and bytecode): reference answers pass, stubs are not implemented,
and the usual mistakes get their specific hint."""
from __future__ import annotations

import pytest
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list

from fxcourse import check
from fxcourse.checks import task_ids


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- reference answers (the lab's solutions) ---------------------------------------------

def predict():
    return {"f1": (1, 0), "f2": (2, 1), "f3": (1, 0), "f4": (2, 1), "f5": (1, 0), "f6": (3, 2)}


def guard_inputs():
    return {
        "fails_on_x": (torch.ones(3, 3), 3, "double"),
        "fails_on_factor": (torch.ones(2, 3), 4, "double"),
        "fails_on_mode": (torch.ones(2, 3), 3, "triple"),
        "passes": (torch.randn(2, 3), 3, "double"),
    }


def cache_sizes(fn, calls):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager")
    sizes = []
    for args in calls:
        compiled(*args)
        sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
    return sizes


def _resume_walk(fn, *args, recursive=True, code_names=True):
    torch._dynamo.reset()
    torch.compile(fn, backend="eager")(*args)
    names, todo, seen = [], [fn.__code__], set()
    while todo:
        code = todo.pop()
        for entry in _debug_get_cache_entry_list(code):
            for name in entry.code.co_names:
                if name.startswith("__resume_at") and name not in seen:
                    seen.add(name)
                    resume = fn.__globals__[name]
                    names.append(resume.__code__.co_name if code_names else name)
                    if recursive:
                        todo.append(resume.__code__)
    return sorted(names)


def resume_names(fn, *args):
    return _resume_walk(fn, *args)


@pytest.mark.parametrize("task_id, answer", [
    ("lab06.1", predict),
    ("lab06.2", guard_inputs),
    ("lab06.3", cache_sizes),
    ("lab06.4", resume_names),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id", ["lab06.1", "lab06.2", "lab06.3", "lab06.4"])
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


def test_task_ids_cover_lab06():
    assert {"lab06.1", "lab06.2", "lab06.3", "lab06.4"} <= set(task_ids())


# -- exercise 1 --------------------------------------------------------------------------

def test_shape_branch_and_early_print_are_the_classic_mispredictions():
    wrong = {**predict(), "f3": (2, 1), "f5": (2, 1)}
    result = check("lab06.1", lambda: wrong)
    assert result.status == "wrong"
    assert "2 of 6" in result.en and "f3:" in result.en and "f5:" in result.en
    assert "guards on the size" in result.en and "graphs − 1" in result.en
    assert "f3: (1, 0)" in result.expected and "f5: (2, 1)" in result.got
    assert "f3：" in result.zh


def test_wrong_prediction_shows_the_break_capture_saw():
    result = check("lab06.1", lambda: {**predict(), "f6": (2, 1)})
    assert result.status == "wrong"
    assert "Tensor.item()" in result.en and "print" in result.en


def test_missing_or_malformed_predictions():
    partial = {k: v for k, v in predict().items() if k != "f4"}
    result = check("lab06.1", lambda: partial)
    assert result.status == "wrong" and "missing: f4" in result.en
    result = check("lab06.1", lambda: {**predict(), "f1": 1})
    assert result.status == "wrong" and "pair" in result.en
    assert check("lab06.1", lambda: [1, 0]).status == "wrong"


# -- exercise 2 --------------------------------------------------------------------------

def test_changing_factor_in_passes_is_caught_as_int_specialization():
    result = check("lab06.2", lambda: {**guard_inputs(), "passes": (torch.randn(2, 3), 5, "double")})
    assert result.status == "wrong" and "specialized" in result.en
    assert result.got.startswith("factor == 3")


def test_failing_the_wrong_guard_first():
    result = check("lab06.2", lambda: {**guard_inputs(), "fails_on_mode": (torch.ones(3, 3), 3, "triple")})
    assert result.status == "wrong" and "failed a guard on x first" in result.en


def test_new_values_do_not_fail_tensor_match():
    result = check("lab06.2", lambda: {**guard_inputs(), "fails_on_x": (torch.zeros(2, 3), 3, "double")})
    assert result.status == "wrong" and "not the values" in result.en


def test_passes_needs_new_values_and_errors_are_not_guard_failures():
    result = check("lab06.2", lambda: {**guard_inputs(), "passes": (torch.ones(2, 3), 3, "double")})
    assert result.status == "wrong" and "same values" in result.en
    result = check("lab06.2", lambda: {**guard_inputs(), "fails_on_factor": (torch.ones(2, 3), "4", "double")})
    assert result.status == "wrong" and "raised an error" in result.en
    assert check("lab06.2", lambda: {"fails_on_x": None}).status == "wrong"


# -- exercise 3 --------------------------------------------------------------------------

def test_forgetting_reset_is_caught():
    def no_reset(fn, calls):
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(fn.__code__)))
        return sizes

    result = check("lab06.3", no_reset)
    assert result.status == "wrong" and "torch._dynamo.reset()" in result.en
    assert result.expected == "[1, 1, 2, 2, 3]"


def test_counting_the_wrapper_is_caught():
    def wrapper_sizes(fn, calls):
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(_debug_get_cache_entry_list(compiled.__code__)))
        return sizes

    result = check("lab06.3", wrapper_sizes)
    assert result.status == "wrong" and "fn.__code__" in result.en


def test_counting_graphs_instead_of_entries_is_caught():
    def graph_counts(fn, calls):
        torch._dynamo.reset()
        graphs = []
        compiled = torch.compile(fn, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
        sizes = []
        for args in calls:
            compiled(*args)
            sizes.append(len(graphs))
        return sizes

    result = check("lab06.3", graph_counts)
    assert result.status == "wrong" and "graph counts" in result.en and "resume function" in result.en
    assert "_halves" in result.tried


# -- exercise 4 --------------------------------------------------------------------------

def test_not_following_resume_functions_is_caught():
    result = check("lab06.4", lambda fn, *args: _resume_walk(fn, *args, recursive=False))
    assert result.status == "wrong" and "first resume function" in result.en
    assert "_two_breaks" in result.tried


def test_global_names_instead_of_code_names_is_caught():
    result = check("lab06.4", lambda fn, *args: _resume_walk(fn, *args, code_names=False))
    assert result.status == "wrong" and "co_name" in result.en


def test_only_resume_functions_that_ran_is_caught():
    def ran_only(fn, *args):
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args)
        names = []
        todo, seen = [fn.__code__], set()
        while todo:
            code = todo.pop()
            for entry in _debug_get_cache_entry_list(code):
                for name in entry.code.co_names:
                    resume = fn.__globals__.get(name)
                    if name.startswith("__resume_at") and name not in seen and \
                            _debug_get_cache_entry_list(resume.__code__):
                        seen.add(name)
                        names.append(resume.__code__.co_name)
                        todo.append(resume.__code__)
        return sorted(names)

    result = check("lab06.4", ran_only)
    assert result.status == "wrong" and "each branch" in result.en
