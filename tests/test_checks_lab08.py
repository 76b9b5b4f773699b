"""Lab 08 checkers: reference answers pass, stubs are "not yet implemented", and the
common mistakes get their specific hints."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from fxcourse import check


class GraphTooLarge(Exception):
    """The exception lab 08 defines for exercise 3."""


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- reference answers (the lab's solutions) ------------------------------------------------

class Recorder(nn.Module):
    def __init__(self, name, store, clone=True):
        super().__init__()
        self.name, self.store, self.clone = name, store, clone

    def forward(self, t):
        self.store[self.name].append(t.detach().clone() if self.clone else t.detach())
        return t


def make_recording_backend(names, *, clone=True, first_graph_only=False, recompile=True):
    store = {name: [] for name in names}
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        if first_graph_only and len(calls) > 1:
            return gm.forward
        for node in list(gm.graph.nodes):
            if node.name in store:
                sub = f"record_{node.name}"
                gm.add_submodule(sub, Recorder(node.name, store, clone))
                with gm.graph.inserting_after(node):
                    rec = gm.graph.call_module(sub, (node,))
                node.replace_all_uses_with(rec, delete_user_cb=lambda user: user is not rec)
        if recompile:
            gm.recompile()
        return gm.forward

    return backend, store


def _is_relu(node, spellings):
    if node.op == "call_function":
        return node.target in spellings
    return "method" in spellings and node.op == "call_method" and node.target == "relu"


def make_swap(spellings=(torch.relu, torch.nn.functional.relu, "method"), recompile=True,
              copy_kwargs=False):
    def relu_to_clamp(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, spellings):
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(torch.clamp, (node.args[0],),
                                                 {**node.kwargs, "min": 0} if copy_kwargs else {"min": 0})
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        if recompile:
            gm.recompile()
        return gm.forward
    return relu_to_clamp


def make_limited(count="ops", strict=False, exc=GraphTooLarge, message=True, under=lambda gm: gm.forward):
    kinds = {"ops": ("call_function", "call_method", "call_module"),
             "functions": ("call_function",)}

    def make_limited_backend(n):
        def backend(gm, example_inputs):
            if count == "nodes":
                ops = len(gm.graph.nodes)
            else:
                ops = sum(1 for node in gm.graph.nodes if node.op in kinds[count])
            if ops >= n + (0 if strict else 1):
                raise exc(f"graph has {ops} ops, more than the limit of {n}" if message else "too big")
            return under(gm)
        return backend
    return make_limited_backend


@pytest.mark.parametrize("task_id, answer", [
    ("lab08.1", make_recording_backend),
    ("lab08.2", make_swap()),
    ("lab08.3", make_limited()),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id", ["lab08.1", "lab08.2", "lab08.3"])
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


# -- exercise 1 mistakes --------------------------------------------------------------------

def test_recording_without_a_copy_is_caught_by_the_in_place_add():
    result = check("lab08.1", lambda names: make_recording_backend(names, clone=False))
    assert result.status == "wrong" and "clone" in result.en and "clone" in result.zh


def test_recording_only_the_first_graph_misses_the_node_after_the_break():
    result = check("lab08.1", lambda names: make_recording_backend(names, first_graph_only=True))
    assert result.status == "wrong" and "once per graph" in result.en and "'y'" in result.en


def test_recording_without_recompile_records_nothing():
    result = check("lab08.1", lambda names: make_recording_backend(names, recompile=False))
    assert result.status == "wrong" and "gm.recompile()" in result.en


def test_recording_then_handing_to_aot_eager_records_fake_tensors():
    from torch._dynamo.backends.registry import lookup_backend

    def answer(names):
        backend, store = make_recording_backend(names)

        def then_aot(gm, example_inputs):
            backend(gm, example_inputs)
            return lookup_backend("aot_eager")(gm, example_inputs)
        return then_aot, store
    result = check("lab08.1", answer)
    assert result.status == "wrong" and "real tensors" in result.en


def test_a_recorder_that_changes_the_value_changes_the_output():
    class Doubler(Recorder):
        def forward(self, t):
            super().forward(t)
            return t * 2

    def answer(names):
        store = {n: [] for n in names}

        def backend(gm, example_inputs):
            for node in list(gm.graph.nodes):
                if node.name in store:
                    gm.add_submodule(f"r_{node.name}", Doubler(node.name, store))
                    with gm.graph.inserting_after(node):
                        rec = gm.graph.call_module(f"r_{node.name}", (node,))
                    node.replace_all_uses_with(rec, delete_user_cb=lambda u: u is not rec)
            gm.recompile()
            return gm.forward
        return backend, store
    result = check("lab08.1", answer)
    assert result.status == "wrong" and "output changed" in result.en


# -- exercise 2 mistakes --------------------------------------------------------------------

def test_swapping_only_torch_relu_names_the_functional_spelling():
    result = check("lab08.2", make_swap(spellings=(torch.relu,)))
    assert result.status == "wrong" and "nn.ReLU" in result.en


def test_swapping_without_the_method_spelling_names_call_method():
    result = check("lab08.2", make_swap(spellings=(torch.relu, torch.nn.functional.relu)))
    assert result.status == "wrong" and "call_method" in result.en


def test_forgetting_recompile_is_named():
    result = check("lab08.2", make_swap(recompile=False))
    assert result.status == "wrong" and "gm.recompile()" in result.en and "gm.recompile()" in result.zh


def test_copying_relus_inplace_kwarg_to_clamp_is_named():
    result = check("lab08.2", make_swap(copy_kwargs=True))
    assert result.status == "wrong" and "inplace" in result.en and "{'min': 0}" in result.zh


def test_returning_something_other_than_gm_forward():
    def answer(gm, example_inputs):
        make_swap()(gm, example_inputs)
        return lambda *args: gm.forward(*args)
    result = check("lab08.2", answer)
    assert result.status == "wrong" and "gm.forward" in result.en


# -- exercise 3 mistakes --------------------------------------------------------------------

def test_counting_every_node_is_named():
    result = check("lab08.3", make_limited(count="nodes"))
    assert result.status == "wrong" and "placeholder" in result.en


def test_off_by_one_is_named():
    result = check("lab08.3", make_limited(strict=True))
    assert result.status == "wrong" and "exactly 4 ops" in result.en


def test_counting_only_call_function_misses_method_calls():
    result = check("lab08.3", make_limited(count="functions"))
    assert result.status == "wrong" and "call_method" in result.en


def test_another_exception_type_is_named():
    result = check("lab08.3", make_limited(exc=ValueError))
    assert result.status == "wrong" and "GraphTooLarge" in result.en and result.got.startswith("ValueError")


def test_message_without_numbers_is_wrong():
    result = check("lab08.3", make_limited(message=False))
    assert result.status == "wrong" and "op count and the limit" in result.en


def test_returning_none_under_the_limit_is_named():
    result = check("lab08.3", make_limited(under=lambda gm: None))
    assert result.status == "wrong" and "gm.forward" in result.en
