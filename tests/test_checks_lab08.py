"""Lab 08 checkers: reference answers pass, stubs are "not yet implemented", and the
common mistakes get their specific hints."""
from __future__ import annotations


import pytest
import torch
from torch import nn

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint


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


def make_recording_backend(names, *, clone=True, first_graph_only=False, recompile=True,
                           submodule=lambda node: f"record_{node.name}", recorder=Recorder):
    store = {name: [] for name in names}
    calls = []

    def backend(gm, example_inputs):
        calls.append(gm)
        if first_graph_only and len(calls) > 1:
            return gm.forward
        for node in list(gm.graph.nodes):
            if node.name in store:
                sub = submodule(node)
                gm.add_submodule(sub, recorder(node.name, store, clone))
                with gm.graph.inserting_after(node):
                    rec = gm.graph.call_module(sub, (node,))
                node.replace_all_uses_with(rec, delete_user_cb=lambda user: user is not rec)
        if recompile:
            gm.recompile()
        return gm.forward

    return backend, store


_EVERY_RELU = (torch.relu, torch.nn.functional.relu, torch.relu_, "method")  # "method": x.relu() and x.relu_()


def _is_relu(node, spellings):
    if node.op == "call_function":
        return node.target in spellings
    return "method" in spellings and node.op == "call_method" and node.target in ("relu", "relu_")


def _was_in_place(node):
    """relu_ (torch.relu_, x.relu_()), or inplace as a keyword (nn.ReLU(inplace=True)) or by position (F.relu(h, True))."""
    if node.target in (torch.relu_, "relu_"):
        return True
    return node.kwargs.get("inplace", node.args[1] if len(node.args) > 1 else False)


def make_swap(spellings=_EVERY_RELU, recompile=True,
              copy_kwargs=False, erase=True, bounds=None, in_place="aware"):
    """in_place: "aware" clamps in place where the relu was in place; "keyword" reads only a keyword inplace;
    "never" / "always" do not look."""
    def relu_to_clamp(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, spellings):
                was = {"aware": _was_in_place(node), "keyword": node.kwargs.get("inplace", False),
                       "never": False, "always": True}[in_place]
                clamp = torch.clamp_ if was else torch.clamp
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(clamp, (node.args[0],),
                                                 {**node.kwargs, "min": 0} if copy_kwargs else bounds or {"min": 0})
                node.replace_all_uses_with(new)
                if erase:
                    gm.graph.erase_node(node)
        if recompile:
            gm.recompile()
        return gm.forward
    return relu_to_clamp


def make_limited(count="ops", strict=False, exc=GraphTooLarge, message=True, under=lambda gm: gm.forward):
    kinds = {"ops": ("call_function", "call_method", "call_module"),
             "functions": ("call_function",),
             "inputs_and_ops": ("placeholder", "call_function", "call_method", "call_module")}

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


@pytest.mark.parametrize("task_id, name", [
    ("lab08.1", "make_recording_backend"), ("lab08.2", "relu_to_clamp"), ("lab08.3", "make_limited_backend"),
])
def test_reference_answers_pass(task_id, name):
    expect_passed(task_id, solution("lab08", name))


@pytest.mark.parametrize("task_id, answer", [
    ("lab08.1", make_recording_backend), ("lab08.2", make_swap()), ("lab08.3", make_limited()),
])
def test_answers_written_another_way_pass(task_id, answer):
    expect_passed(task_id, answer)


@pytest.mark.parametrize("task_id", ["lab08.1", "lab08.2", "lab08.3"])
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


@pytest.mark.parametrize("task_id", ["lab08.1", "lab08.2", "lab08.3"])
def test_every_task_has_a_hint_ladder(task_id):
    steps = [hint(task_id, level=i) for i in (1, 2)]
    assert all(s.count >= 2 and s.en and s.zh for s in steps)
    assert "Lecture 08" in steps[1].en and "第 08 讲" in steps[1].zh


# -- exercise 1 mistakes --------------------------------------------------------------------

def test_lab08_1_recording_without_a_copy_is_caught_by_the_in_place_add():
    result = expect_wrong("lab08.1", lambda names: make_recording_backend(names, clone=False))
    assert "y.add_(1)" in result.en and "副本" in result.zh and "clone" not in result.en


def test_lab08_1_recording_only_the_first_graph_misses_the_node_after_the_break():
    result = expect_wrong("lab08.1", lambda names: make_recording_backend(names, first_graph_only=True))
    assert "once per graph" in result.en and "'y'" in result.en and "每张计算图" in result.zh


def test_lab08_1_recording_without_recompile_records_nothing():
    result = expect_wrong("lab08.1", lambda names: make_recording_backend(names, recompile=False))
    assert "not regenerated" in result.en and "没有重新生成" in result.zh


def test_lab08_1_one_submodule_name_for_every_recorder():
    result = expect_wrong("lab08.1", lambda names: make_recording_backend(names, submodule=lambda node: "recorder"))
    assert "same submodule name" in result.en and "同一个子模块名" in result.zh
    assert "graph break" not in result.en


def test_lab08_1_store_made_inside_the_backend_stays_empty():
    def answer(names):
        returned = {name: [] for name in names}

        def backend(gm, example_inputs):
            inner, _ = make_recording_backend(names)
            return inner(gm, example_inputs)
        return backend, returned
    result = expect_wrong("lab08.1", answer)
    assert "same dict" in result.en and "同一个 dict" in result.zh


def test_lab08_1_recording_then_handing_to_aot_eager_records_fake_tensors():
    from torch._dynamo.backends.registry import lookup_backend

    def answer(names):
        backend, store = make_recording_backend(names)

        def then_aot(gm, example_inputs):
            backend(gm, example_inputs)
            return lookup_backend("aot_eager")(gm, example_inputs)
        return then_aot, store
    result = expect_wrong("lab08.1", answer)
    assert "real tensors" in result.en and "真实张量" in result.zh


def test_lab08_1_a_recorder_that_changes_the_value_changes_the_output():
    class Doubler(Recorder):
        def forward(self, t):
            super().forward(t)
            return t * 2
    result = expect_wrong("lab08.1", lambda names: make_recording_backend(names, recorder=Doubler))
    assert "output changed" in result.en and "输出变了" in result.zh


# -- exercise 2 mistakes --------------------------------------------------------------------

def test_lab08_2_swapping_only_torch_relu_names_the_functional_spelling():
    result = expect_wrong("lab08.2", make_swap(spellings=(torch.relu,)))
    assert "nn.ReLU" in result.en and "nn.ReLU" in result.zh


def test_lab08_2_swapping_without_the_method_spelling_names_call_method():
    result = expect_wrong("lab08.2", make_swap(spellings=(torch.relu, torch.nn.functional.relu, torch.relu_)))
    assert "call_method" in result.en and "call_method" in result.zh


def test_lab08_2_forgetting_recompile_is_named():
    result = expect_wrong("lab08.2", make_swap(recompile=False))
    assert "not regenerated" in result.en and "没有重新生成" in result.zh


def test_lab08_2_copying_relus_inplace_kwarg_to_clamp_is_named():
    result = expect_wrong("lab08.2", make_swap(copy_kwargs=True))
    assert "inplace" in result.en and "inplace" in result.zh and "min=0" in result.zh


def test_lab08_2_leaving_the_unused_relu_in_the_graph():
    result = expect_wrong("lab08.2", make_swap(erase=False))
    assert "no users" in result.en and "没有任何使用者" in result.zh
    assert "spellings" not in result.en


def test_lab08_2_a_clamp_with_the_wrong_bound():
    result = expect_wrong("lab08.2", make_swap(bounds={"max": 0}))
    assert "min=0 only" in result.en and "min=0" in result.zh


def test_lab08_2_returning_something_other_than_gm_forward():
    def answer(gm, example_inputs):
        make_swap()(gm, example_inputs)
        return lambda *args: gm.forward(*args)
    result = expect_wrong("lab08.2", answer)
    assert "edited GraphModule's forward" in result.en and "forward" in result.zh


# -- exercise 3 mistakes --------------------------------------------------------------------

def test_lab08_3_counting_every_node_is_named():
    result = expect_wrong("lab08.3", make_limited(count="nodes"))
    assert "every node" in result.en and "placeholder" in result.zh


def test_lab08_3_counting_placeholders_is_named():
    result = expect_wrong("lab08.3", make_limited(count="inputs_and_ops"))
    assert "placeholders as ops" in result.en and "placeholder 也算作算子" in result.zh


def test_lab08_3_off_by_one_is_named():
    result = expect_wrong("lab08.3", make_limited(strict=True))
    assert "exactly n ops" in result.en and "恰好有 n 个算子" in result.zh
    assert "exactly 4 ops" in result.tried[0] and "恰好 4 个算子" in result.tried[1]


def test_lab08_3_counting_only_call_function_misses_method_calls():
    result = expect_wrong("lab08.3", make_limited(count="functions"))
    assert "call_method" in result.en and "call_method" in result.zh


def test_lab08_3_another_exception_type_is_named():
    result = expect_wrong("lab08.3", make_limited(exc=ValueError))
    assert "GraphTooLarge" in result.en and result.got.startswith("ValueError")


def test_lab08_3_message_without_numbers_is_wrong():
    result = expect_wrong("lab08.3", make_limited(message=False))
    assert "op count and the limit" in result.en and "算子数和上限" in result.zh


def test_lab08_3_returning_none_under_the_limit_is_named():
    result = expect_wrong("lab08.3", make_limited(under=lambda gm: None))
    assert "gm.forward" in result.en and "None" in result.zh


# -- found by an adversarial review: near-misses a learner writes ---------------------------------

def _recording_backend(names, *, reroute=True, fresh_lists=False, exclude_recorder=True):
    store = {name: [] for name in names}
    made = []

    def backend(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if node.name in names:
                if fresh_lists:
                    store[node.name] = []
                sub = f"record_{node.name}_{len(made)}"
                made.append(sub)
                gm.add_submodule(sub, Recorder(node.name, store))
                with gm.graph.inserting_after(node):
                    rec = gm.graph.call_module(sub, (node,))
                if reroute and exclude_recorder:
                    node.replace_all_uses_with(rec, delete_user_cb=lambda user: user is not rec)
                elif reroute:
                    node.replace_all_uses_with(rec)
        gm.recompile()
        return gm.forward

    return backend, store


def test_lab08_1_a_recorder_nobody_reads_is_named():
    result = expect_wrong("lab08.1", lambda names: _recording_backend(names, reroute=False))
    assert "still read 'h' itself" in result.en and "仍然直接读取 'h'" in result.zh
    assert "delete_user_cb" not in result.en


def test_lab08_1_a_recorder_reading_itself_is_named():
    result = expect_wrong("lab08.1", lambda names: _recording_backend(names, exclude_recorder=False))
    assert "reads its own output" in result.en and "读取的是它自己的输出" in result.zh
    assert "delete_user_cb" not in result.en and "lambda" not in result.en


def test_lab08_1_new_lists_on_every_backend_call_are_named():
    result = expect_wrong("lab08.1", lambda names: _recording_backend(names, fresh_lists=True))
    assert "only the values of the last" in result.en and "只保留了最后" in result.zh
    assert "edit every graph" not in result.en  # not the misleading "edit every graph" diagnosis


def test_lab08_2_a_clamp_after_the_relu_is_named():
    def clamp_after(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, _EVERY_RELU):
                with gm.graph.inserting_after(node):
                    clamp = gm.graph.call_function(torch.clamp, (node,), {"min": 0})
                node.replace_all_uses_with(clamp, delete_user_cb=lambda user: user is not clamp)
        gm.recompile()
        return gm.forward
    result = expect_wrong("lab08.2", clamp_after)
    assert "reads the relu's output" in result.en and "读取的是 relu 的输出" in result.zh
    assert "Match every spelling" not in result.en


def test_lab08_2_retargeting_the_relu_node_in_place_passes():
    def retarget(gm, example_inputs):
        for node in gm.graph.nodes:
            if _is_relu(node, _EVERY_RELU):
                in_place = _was_in_place(node)
                node.op, node.target = "call_function", torch.clamp_ if in_place else torch.clamp
                node.args, node.kwargs = (node.args[0],), {"min": 0}
        gm.recompile()
        return gm.forward
    expect_passed("lab08.2", retarget)


def test_lab08_2_an_out_of_place_clamp_for_an_in_place_relu_is_named():
    # the lab's earlier reference: right values everywhere except where the relu's input is read again
    result = expect_wrong("lab08.2", make_swap(in_place="never"))
    assert "a relu with inplace=True changes its input in place" in result.en
    assert "原地修改它的输入" in result.zh and "inplace=True" in result.zh
    assert "reads each relu's input again" in result.tried[0] and "再次读取" in result.tried[1]


def test_lab08_2_reading_inplace_only_as_a_keyword_is_named():
    # F.relu(h, True): Dynamo keeps inplace as the second positional argument, so kwargs has no "inplace"
    result = expect_wrong("lab08.2", make_swap(in_place="keyword"))
    assert "a relu with inplace=True changes its input in place" in result.en and "by position" in result.en
    assert "位置参数" in result.zh and "原地修改它的输入" in result.zh
    assert "F.relu(h, True)" in result.tried[0] and "F.relu(h, True)" in result.tried[1]


def test_lab08_2_clamping_every_relu_in_place_is_named():
    result = expect_wrong("lab08.2", make_swap(in_place="always"))
    assert "a relu that was not in place became a clamp that changes its input in place" in result.en
    assert "不是原地运算的 relu 被换成了原地修改输入的 clamp" in result.zh


def test_lab08_2_in_place_by_reading_the_module_instead_of_the_node_is_named():
    # inplace read from whether the relu is spelled F.relu: every nn.ReLU becomes in place
    def by_spelling(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, _EVERY_RELU):
                clamp = torch.clamp_ if node.target is torch.nn.functional.relu else torch.clamp
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(clamp, (node.args[0],), {"min": 0})
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward
    result = expect_wrong("lab08.2", by_spelling)
    assert "not in place became a clamp that changes its input in place" in result.en
    assert "只有 inplace=True 的 relu" in result.zh


def test_lab08_2_in_place_aware_answers_written_differently_pass():
    def method_in_place(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, _EVERY_RELU):
                name = "clamp_min_" if _was_in_place(node) else "clamp"
                with gm.graph.inserting_before(node):
                    new = gm.graph.call_method(name, (node.args[0],), {"min": 0} if name == "clamp" else {})
                    if name == "clamp_min_":
                        new.args = (node.args[0], 0)
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward

    def clamp_then_copy_back(gm, example_inputs):
        # an in-place relu: an out-of-place clamp, then its values copied back into the relu's input
        for node in list(gm.graph.nodes):
            if _is_relu(node, _EVERY_RELU):
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_method("clamp", (node.args[0],), {"min": 0})
                if _was_in_place(node):
                    with gm.graph.inserting_after(new):
                        new = gm.graph.call_method("copy_", (node.args[0], new))
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward

    for answer in (method_in_place, clamp_then_copy_back):
        expect_passed("lab08.2", answer)


def test_lab08_2_an_out_of_place_clamp_with_later_readers_moved_to_it_is_named():
    # right values everywhere, but the in-place relu no longer changes the tensor itself (here the caller's x)
    def reroute_later_readers(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, _EVERY_RELU):
                source = node.args[0]
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(torch.clamp, (source,), {"min": 0})
                node.replace_all_uses_with(new)
                if _was_in_place(node):
                    order = {n: i for i, n in enumerate(gm.graph.nodes)}
                    for user in list(source.users):
                        if user is not new and order[user] > order[new]:
                            user.replace_input_with(source, new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward
    result = expect_wrong("lab08.2", reroute_later_readers)
    assert "the caller's x is left as it was" in result.en and "调用方的 x 保持原样" in result.zh
    assert "F.relu(x, inplace=True)" in result.tried[0] and "F.relu(x, inplace=True)" in result.tried[1]


def test_lab08_3_subtracting_two_nodes_is_named():
    def minus_two(n):
        def backend(gm, example_inputs):
            ops = len(gm.graph.nodes) - 2
            if ops > n:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", minus_two)
    assert "one placeholder per input" in result.en and "每个输入都对应一个 placeholder" in result.zh
    assert "two tensors" in result.tried[0]


def test_lab08_3_checking_only_the_first_graph_is_named():
    def first_only(n):
        seen = []

        def backend(gm, example_inputs):
            seen.append(gm)
            ops = sum(1 for node in gm.graph.nodes if node.op in ("call_function", "call_method", "call_module"))
            if len(seen) == 1 and ops > n:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", first_only)
    assert "after the graph break" in result.en and "图中断之后" in result.zh
    assert "call_method nodes too" not in result.en  # the old, misleading diagnosis


def test_lab08_3_counting_nodes_minus_the_inputs_counts_get_attr_and_is_named():
    # right on every graph without get_attr nodes; a torch.cond graph has two (its branches)
    def minus_inputs(n):
        def backend(gm, example_inputs):
            ops = len(gm.graph.nodes) - len(example_inputs) - 1
            if ops > n:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", minus_inputs)
    assert "count get_attr nodes as ops" in result.en and "把 get_attr 节点也算作了算子" in result.zh
    assert "torch.cond" in result.tried[0] and "torch.cond" in result.tried[1]


def test_lab08_3_counting_every_node_but_inputs_and_output_is_named():
    result = expect_wrong("lab08.3", _limited_by(lambda gm: sum(1 for node in gm.graph.nodes
                                                                if node.op not in ("placeholder", "output"))))
    assert "count get_attr nodes as ops" in result.en and "把 get_attr 节点也算作了算子" in result.zh


def test_lab08_3_nodes_minus_inputs_minus_get_attr_passes():
    def minus_fetches(n):
        def backend(gm, example_inputs):
            ops = len(gm.graph.nodes) - len(gm.graph.find_nodes(op="placeholder")) - 1 \
                - len(gm.graph.find_nodes(op="get_attr"))
            if ops > n:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    expect_passed("lab08.3", minus_fetches)


def _limited_by(count, *, cumulative=False, message="graph has {ops} ops, more than the limit of {n}"):
    def make_limited_backend(n):
        seen = []

        def backend(gm, example_inputs):
            ops = count(gm)
            seen.append(ops)
            if (sum(seen) if cumulative else ops) > n:
                raise GraphTooLarge(message.format(ops=ops, n=n))
            return gm.forward
        return backend
    return make_limited_backend


def _ops_of(*kinds):
    return lambda gm: sum(1 for node in gm.graph.nodes if node.op in kinds)


def test_lab08_3_forgetting_call_module_is_named():
    result = expect_wrong("lab08.3", _limited_by(_ops_of("call_function", "call_method")))
    assert "count call_module nodes too" in result.en and "call_module 节点也要计数" in result.zh
    assert "symbolic_trace" in result.tried[0] and "call_module" in result.tried[1]


def test_lab08_3_adding_up_the_ops_of_every_graph_is_named():
    result = expect_wrong("lab08.3", _limited_by(_ops_of("call_function", "call_method", "call_module"),
                                                 cumulative=True))
    assert "adds up the ops of every graph" in result.en and "累加" in result.zh
    assert "two graphs of 3 ops" in result.tried[0]


def test_lab08_3_numbers_the_wrong_way_round_in_the_message_are_named():
    result = expect_wrong("lab08.3", _limited_by(_ops_of("call_function", "call_method", "call_module"),
                                                 message="graph has {n} ops, more than the limit of {ops}"))
    assert "the wrong way round" in result.en and "两个数写反了" in result.zh


def test_lab08_3_counting_the_output_node_is_named():
    result = expect_wrong("lab08.3", _limited_by(lambda gm: sum(1 for node in gm.graph.nodes
                                                                if node.op != "placeholder")))
    assert "count the output node as an op" in result.en and "把 output 节点也算作了算子" in result.zh


def test_lab08_3_accepting_n_plus_one_ops_is_named():
    result = expect_wrong("lab08.3", _limited_by(lambda gm: sum(1 for node in gm.graph.nodes
                                                                if node.op.startswith("call_")) - 1))
    assert "you accept a graph with n + 1 ops" in result.en and "接受了有 n + 1 个算子" in result.zh
    assert "call_method nodes too" not in result.en  # not the diagnosis of another mistake


def test_lab08_3_unusual_right_answers_pass():
    from collections import Counter

    def by_counter(n):
        def backend(gm, example_inputs):
            kinds = Counter(node.op for node in gm.graph.nodes)
            ops = kinds["call_function"] + kinds["call_method"] + kinds["call_module"]
            if not ops <= n:
                raise GraphTooLarge(f"{ops} ops exceed the limit {n}")
            return gm  # a GraphModule is callable too
        return backend

    def by_elimination(n):
        def backend(gm, example_inputs):
            ops = sum(1 for node in gm.graph.nodes if node.op not in ("placeholder", "output", "get_attr"))
            if ops >= n + 1:
                raise GraphTooLarge(f"limit {n}: the graph has {ops} ops")
            return lambda *args: gm.forward(*args)
        return backend

    for answer in (by_counter, by_elimination,
                   _limited_by(lambda gm: sum(node.op.startswith("call_") for node in gm.graph.nodes))):
        expect_passed("lab08.3", answer)


# -- one language at a time ----------------------------------------------------------------------



@pytest.mark.parametrize("task_id, answer", [
    ("lab08.1", lambda names: make_recording_backend(names, clone=False)),
    ("lab08.2", make_swap(erase=False)),
    ("lab08.3", make_limited(strict=True)),
], ids=["lab08.1", "lab08.2", "lab08.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)


def test_lab08_1_matching_names_by_prefix_is_named():
    # 'h' also matches the node h_1 (a later value assigned to h)
    def by_prefix(names):
        store = {name: [] for name in names}

        class Rec(nn.Module):
            def __init__(self, key):
                super().__init__()
                self.key = key

            def forward(self, t):
                store[self.key].append(t.detach().clone())
                return t

        def backend(gm, example_inputs):
            for node in list(gm.graph.nodes):
                hit = next((name for name in names if node.name.startswith(name)), None)
                if hit and node.op != "placeholder":
                    gm.add_submodule(f"rec_{node.name}", Rec(hit))
                    with gm.graph.inserting_after(node):
                        rec = gm.graph.call_module(f"rec_{node.name}", (node,))
                    node.replace_all_uses_with(rec, delete_user_cb=lambda user: user is not rec)
            gm.recompile()
            return gm.forward
        return backend, store
    result = expect_wrong("lab08.1", by_prefix)
    assert "only starts with 'h'" in result.en and "h_1" in result.en
    assert "完全相等的比较" in result.zh


# -- found by a second adversarial review -----------------------------------------------------------

def test_lab08_1_a_call_function_recorder_is_named_as_not_call_module():
    def make(names):
        store = {name: [] for name in names}

        def rec(t, name):
            store[name].append(t.detach().clone())
            return t

        def backend(gm, example_inputs):
            for node in list(gm.graph.nodes):
                if node.name in store:
                    with gm.graph.inserting_after(node):
                        new = gm.graph.call_function(rec, (node, node.name))
                    node.replace_all_uses_with(new, delete_user_cb=lambda user: user is not new)
            gm.recompile()
            return gm.forward
        return backend, store
    result = expect_wrong("lab08.1", make)
    assert "is a call_function node (rec), not a call_module node" in result.en
    assert "call_function 节点（rec），而不是 call_module 节点" in result.zh
    assert "recorder's output is unused" not in result.en


def test_lab08_1_recording_through_an_interpreter_is_named_as_no_edit():
    def make(names):
        store = {name: [] for name in names}

        def backend(gm, example_inputs):
            class Recording(torch.fx.Interpreter):
                def run_node(self, node):
                    value = super().run_node(node)
                    if node.name in store:
                        store[node.name].append(value.detach().clone())
                    return value
            return lambda *args: Recording(gm).run(*args)
        return backend, store
    result = expect_wrong("lab08.1", make)
    assert "no recorder node was inserted" in result.en and "没有插入任何记录节点" in result.zh
    assert "Move every other user" not in result.en


def test_lab08_3_counting_inside_the_cond_branches_is_named():
    def with_branches(gm):
        ops = _ops_of("call_function", "call_method", "call_module")
        return ops(gm) + sum(ops(m) for m in gm.modules() if m is not gm and isinstance(m, torch.fx.GraphModule))
    result = expect_wrong("lab08.3", _limited_by(with_branches))
    assert "inside torch.cond's branches" in result.en and "分支内部的算子" in result.zh
    assert "get_attr nodes as ops" not in result.en


def test_lab08_3_counting_distinct_targets_is_named():
    result = expect_wrong("lab08.3", _limited_by(
        lambda gm: len({node.target for node in gm.graph.nodes if node.op.startswith("call_")})))
    assert "each kind of op once" in result.en and "只算了一次" in result.zh
    assert "call_method nodes too" not in result.en


def test_lab08_3_a_count_kept_across_backends_is_named():
    total = [0]

    def make(n):
        def backend(gm, example_inputs):
            total[0] += sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))
            if total[0] > n:
                raise GraphTooLarge(f"graph has {total[0]} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", make)
    assert "more than it has nodes at all" in result.en and "累加" in result.zh
    assert "exactly" not in result.en


def test_lab08_3_an_exception_from_the_backends_own_code_is_shown():
    # find_nodes(op="call_function") needs a target: torch asserts, which is the backend's own failure
    result = expect_wrong("lab08.3", _limited_by(
        lambda gm: sum(len(gm.graph.find_nodes(op=op)) for op in ("call_function", "call_method", "call_module"))))
    assert "your backend raised AssertionError" in result.en and "抛出了 AssertionError" in result.zh
    assert "AssertionError" in result.got


def test_lab08_3_another_exception_for_a_graph_over_the_limit_is_named():
    def make(n):
        def backend(gm, example_inputs):
            ops = sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))
            if ops > n:
                raise ValueError(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", make)
    assert "raised ValueError, not the GraphTooLarge exception" in result.en and "而不是本实验开头定义的 GraphTooLarge" in result.zh


# -- found by a third adversarial review (issue 30) and the fix round's own attack -----------------

def _recording_with(*, keep=lambda t: t.detach().clone(), give=lambda t, kept: t, key=lambda name: name,
                    match=lambda node, store: node.name in store, store=lambda names: {name: [] for name in names},
                    add=lambda values, kept: values.append(kept)):
    """A recording backend whose recorder stores ``keep(t)`` under ``key(name)`` (with ``add``) and returns
    ``give(t, kept)``; ``store(names)`` makes the store."""
    made_store = store

    def make(names):
        store = made_store(names)

        class Rec(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.name = name

            def forward(self, t):
                kept = keep(t)
                add(store.setdefault(key(self.name), []), kept)
                return give(t, kept)

        def backend(gm, example_inputs):
            for node in list(gm.graph.nodes):
                if match(node, store):
                    gm.add_submodule(f"rec_{node.name}", Rec(node.name))
                    with gm.graph.inserting_after(node):
                        rec = gm.graph.call_module(f"rec_{node.name}", (node,))
                    node.replace_all_uses_with(rec, delete_user_cb=lambda user: user is not rec)
            gm.recompile()
            return gm.forward
        return backend, store
    return make


def test_lab08_1_a_recorder_returning_a_detached_tensor_is_named():
    # values unchanged, but backward stops at the recorded node
    result = expect_wrong("lab08.1", _recording_with(give=lambda t, kept: t.detach()))
    assert "no gradient reaches x, fc1.weight" in result.en and "梯度传不到 x, fc1.weight" in result.zh
    assert "gradients" in result.tried[0] and "开启梯度" in result.tried[1]


def test_lab08_1_a_recorder_returning_the_copy_it_stored_is_named():
    # it used to read as "y was changed later by y.add_(1)"; the real mistake is the detached return value
    result = expect_wrong("lab08.1", _recording_with(give=lambda t, kept: kept))
    assert "the detached copy it stored" in result.en and "它保存的那份 detach 过的副本" in result.zh
    assert "y.add_(1)" not in result.en


def test_lab08_1_storing_a_copy_still_attached_to_autograd_is_named():
    result = expect_wrong("lab08.1", _recording_with(keep=lambda t: t.clone()))
    assert "still attached to autograd (requires_grad=True)" in result.en and "仍然连在 autograd 上" in result.zh
    assert "requires_grad=True" in result.got[0] and "requires_grad=True" in result.got[1]


def test_lab08_1_recording_only_call_function_nodes_is_named():
    # 'a' = h.tanh() is a call_method node
    result = expect_wrong("lab08.1", _recording_with(match=lambda node, store: node.op == "call_function"
                                                     and node.name in store))
    assert "'a', a call_method node" in result.en and "whatever its op" in result.en
    assert "它是一个 call_method 节点" in result.zh and "不论它的 op 是什么" in result.zh


def test_lab08_1_storing_under_other_keys_is_named():
    result = expect_wrong("lab08.1", _recording_with(key=lambda name: f"record_{name}"))
    assert "under the key(s) record_a, record_h" in result.en and "追加到了键 record_a, record_h 下" in result.zh


def test_lab08_1_recorders_written_differently_pass():
    from collections import defaultdict
    for answer in (_recording_with(keep=lambda t: t.clone().detach()),
                   _recording_with(keep=lambda t: t.data.clone()),
                   _recording_with(store=lambda names: defaultdict(list, {name: [] for name in names}))):
        expect_passed("lab08.1", answer)


def _swap_with(clamp, *, args=lambda node: (node.args[0],), kwargs=lambda node: {"min": 0}, op="call_function",
               where=lambda node: node, in_place=_was_in_place):
    """Swap every relu for ``clamp(in_place(node))`` called with ``args(node)``, ``kwargs(node)``, inserted
    after ``where(node)``."""
    def relu_to_clamp(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if _is_relu(node, _EVERY_RELU):
                with gm.graph.inserting_after(where(node)):
                    new = gm.graph.create_node(op, clamp(in_place(node)), args(node), kwargs(node))
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward
    return relu_to_clamp


def test_lab08_2_a_float_bound_is_named_on_an_integer_tensor():
    result = expect_wrong("lab08.2", _swap_with(lambda in_place: torch.clamp_ if in_place else torch.clamp,
                                                kwargs=lambda node: {"min": 0.0}))
    assert "clamps at the float 0.0" in result.en and "integer 0" in result.en
    assert "浮点数 0.0" in result.zh and "整数 0" in result.zh
    assert "int64" in result.tried[0] and "int64" in result.tried[1]


def test_lab08_2_a_float_bound_on_the_out_of_place_clamps_is_named_by_the_dtype():
    # in-place clamps at 0, out-of-place ones at 0.0: the integer model's output comes back as float
    result = expect_wrong("lab08.2", _swap_with(lambda in_place: torch.clamp_ if in_place else torch.clamp,
                                                kwargs=lambda node: {"min": 0 if _was_in_place(node) else 0.0}))
    assert "clamps at the float 0.0" in result.en and "浮点数 0.0" in result.zh
    assert "torch.float32" in result.got[0] and "torch.int64" in result.expected[0]


def test_lab08_2_every_spelling_of_clamp_passes():
    aten = torch.ops.aten
    for answer in (
        _swap_with(lambda in_place: torch.Tensor.clamp_ if in_place else torch.Tensor.clamp),
        _swap_with(lambda in_place: aten.clamp_ if in_place else aten.clamp),
        _swap_with(lambda in_place: aten.clamp_.default if in_place else aten.clamp.default,
                   args=lambda node: (node.args[0], 0), kwargs=lambda node: {}),
        _swap_with(lambda in_place: aten.clamp_min_ if in_place else aten.clamp_min,
                   args=lambda node: (node.args[0], 0), kwargs=lambda node: {}),
        _swap_with(lambda in_place: torch.Tensor.clip_ if in_place else torch.Tensor.clip),
        _swap_with(lambda in_place: torch.clamp_ if in_place else torch.clamp,
                   args=lambda node: (), kwargs=lambda node: {"input": node.args[0], "min": 0}),
    ):
        expect_passed("lab08.2", answer)


def _skipping(skip):
    return _limited_by(lambda gm: sum(1 for node in gm.graph.nodes if node.op.startswith("call_") and not skip(node)))


def test_lab08_3_skipping_getitem_nodes_is_named():
    import operator
    result = expect_wrong("lab08.3", _skipping(lambda node: node.target is operator.getitem))
    assert "you leave out the getitem nodes" in result.en and "你漏掉了 getitem 节点" in result.zh
    assert "torch.cond" in result.tried[0]


def test_lab08_3_skipping_the_cond_node_is_named():
    result = expect_wrong("lab08.3", _skipping(lambda node: node.target is torch.ops.higher_order.cond))
    assert "you leave out the cond node" in result.en and "你漏掉了 cond 节点" in result.zh
    assert "getitem nodes" not in result.en.split(":")[0]


def test_lab08_3_skipping_ops_without_users_is_named():
    # y.add_(1.0): an in-place call whose result no node reads
    result = expect_wrong("lab08.3", _skipping(lambda node: not node.users))
    assert "ops whose result no node reads" in result.en and "结果没有被任何节点读取的算子" in result.zh
    assert "y.add_(1.0)" in result.tried[0] and "y.add_(1.0)" in result.tried[1]


def test_lab08_3_skipping_python_operators_is_named():
    result = expect_wrong("lab08.3", _skipping(
        lambda node: getattr(node.target, "__module__", None) in ("_operator", "operator")))
    assert "you leave out the Python operators" in result.en and "你漏掉了 Python 运算符" in result.zh


def test_lab08_3_an_unknown_way_of_skipping_ops_lists_the_graphs_ops():
    # counts only nodes whose example value is one tensor (not cond, sort, nor an fx.symbolic_trace graph's nodes)
    result = expect_wrong("lab08.3", _limited_by(lambda gm: sum(
        1 for node in gm.graph.nodes
        if node.op.startswith("call_") and isinstance(node.meta.get("example_value"), torch.Tensor))))
    assert "its ops are the nodes sum_1, gt, cond, getitem, mul" in result.en
    assert "它的算子是节点 sum_1, gt, cond, getitem, mul" in result.zh
    assert "call_method nodes too" not in result.en  # the old, misleading diagnosis


# -- found by a fourth adversarial review (lab08 findings 1-12) -------------------------------------

@pytest.mark.parametrize("give", [lambda t, kept: t.clone(), lambda t, kept: t * 1], ids=["clone", "times_one"])
def test_lab08_1_a_recorder_returning_a_new_tensor_is_named(give):
    # x.mul_(2) on the model's input then changes the copy, not the caller's x
    result = expect_wrong("lab08.1", _recording_with(give=give))
    assert "a recorder returned a copy of its input" in result.en and "有记录器返回了输入的副本" in result.zh
    assert "the caller's x unchanged" in result.got[0] and "调用方的 x 没有变" in result.got[1]


def test_lab08_1_storing_the_tensor_and_returning_a_copy_is_named():
    # the store aliases the caller's x: the caller's later changes would reach it
    result = expect_wrong("lab08.1", _recording_with(keep=lambda t: t.detach(), give=lambda t, kept: t.clone()))
    assert "returned a copy of its input" in result.en and "返回了输入的副本" in result.zh


def test_lab08_1_a_copy_in_another_dtype_is_named():
    result = expect_wrong("lab08.1", _recording_with(keep=lambda t: t.detach().clone().float()))
    assert "their dtype is torch.float32" in result.en and "dtype 是 torch.float32" in result.zh
    assert "float64" in result.tried[0] and "float64" in result.tried[1]


def test_lab08_1_a_store_filled_lazily_is_named():
    result = expect_wrong("lab08.1", _recording_with(store=lambda names: {}))
    assert "a key for every name, each an empty list" in result.en and "每个名字都有一个键，对应一个空列表" in result.zh
    assert result.got == "{}"


def test_lab08_1_a_recorder_that_replaces_the_list_is_named():
    def replace(values, kept):
        values[:] = [kept]
    result = expect_wrong("lab08.1", _recording_with(add=replace))
    assert "replaced what the list held instead of adding to it" in result.en and "替换掉列表里原有的内容" in result.zh
    assert "backend started a new list" not in result.en
    assert result.got[0] == "1 tensor" and result.expected[0] == "2 tensors"


def test_lab08_1_one_buffer_for_every_call_is_named():
    buffers = {}

    def into_buffer(t):
        key = (tuple(t.shape), t.dtype)
        if key not in buffers:
            buffers[key] = t.detach().clone()
        return buffers[key].copy_(t.detach())
    result = expect_wrong("lab08.1", _recording_with(keep=into_buffer))
    assert "share their memory" in result.en and "共用同一块内存" in result.zh


def test_lab08_1_a_stored_output_the_caller_changes_is_named():
    # the model's output is stored without a copy: the caller changing what it got back changes the store
    def make(names):
        backend, store = _recording_with()(names)
        original = backend

        def aliasing(gm, example_inputs):
            returned = original(gm, example_inputs)
            for name, sub in gm.named_children():
                if sub.__class__.__name__ == "Rec" and sub.name == "add":
                    sub.forward = lambda t, sub=sub: (store[sub.name].append(t.detach()), t)[1]
            return returned
        return aliasing, store
    result = expect_wrong("lab08.1", make)
    assert "the store holds that tensor itself" in result.en and "store 里保存的是那个张量本身" in result.zh


def test_lab08_1_a_recorder_read_by_only_some_users_is_named():
    # l_x_ has two users (mul_, add): only the last one is moved to the recorder
    def make(names):
        store = {name: [] for name in names}

        def backend(gm, example_inputs):
            for node in list(gm.graph.nodes):
                if node.name in store:
                    gm.add_submodule(f"rec_{node.name}", Recorder(node.name, store))
                    with gm.graph.inserting_after(node):
                        rec = gm.graph.call_module(f"rec_{node.name}", (node,))
                    last = [user for user in node.users if user is not rec][-1]
                    last.replace_input_with(node, rec)
            gm.recompile()
            return gm.forward
        return backend, store
    result = expect_wrong("lab08.1", make)
    assert "while other users read the recorder" in result.en and "而其他使用者读取的是记录器" in result.zh
    assert "output is unused" not in result.en


def test_lab08_2_matching_relu_in_the_targets_name_is_named():
    def by_target_name(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if node.op in ("call_function", "call_method") and "relu" in getattr(node.target, "__name__", node.target):
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(torch.clamp_ if _was_in_place(node) else torch.clamp,
                                                 (node.args[0],), {"min": 0})
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward
    result = expect_wrong("lab08.2", by_target_name)
    assert "the node leaky_relu (call_function leaky_relu) is no ReLU" in result.en
    assert "节点 leaky_relu（call_function leaky_relu）并不是 ReLU" in result.zh


def test_lab08_2_matching_relu_in_the_nodes_name_is_named():
    def by_node_name(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if node.op in ("call_function", "call_method") and "relu" in node.name:
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(torch.clamp_ if _was_in_place(node) else torch.clamp,
                                                 (node.args[0],), {"min": 0})
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.recompile()
        return gm.forward
    result = expect_wrong("lab08.2", by_node_name)
    assert "in a node named y" in result.en and "not by their name" in result.en
    assert "所在节点名为 y" in result.zh and "而不是按名字" in result.zh


def test_lab08_2_an_inplace_argument_that_is_only_present_is_named():
    # F.relu(g, False): inplace given by position and False
    result = expect_wrong("lab08.2", _swap_present_is_in_place())
    assert "a relu that was not in place became a clamp that changes its input in place" in result.en
    assert "F.relu(h, False)" in result.en and "F.relu(h, False)" in result.zh
    assert "F.relu(g, False)" in result.tried[0]


def _swap_present_is_in_place():
    # an inplace argument that is only present (F.relu(g, False) by position) is taken for True
    return _swap_placed(lambda node: node, lambda node: node.target in (torch.relu_, "relu_")
                        or node.kwargs.get("inplace", False) or len(node.args) > 1)


@pytest.mark.parametrize("spelling, named", [
    ("method", "x.relu_()"), (torch.relu_, "torch.relu_"),
], ids=["method_relu_", "torch_relu_"])
def test_lab08_2_missing_an_in_place_spelling_is_named(spelling, named):
    if spelling == "method":  # keep x.relu(), drop x.relu_()
        def relu_to_clamp(gm, example_inputs):
            for node in list(gm.graph.nodes):
                if _is_relu(node, _EVERY_RELU) and node.target != "relu_":
                    with gm.graph.inserting_after(node):
                        new = gm.graph.call_function(torch.clamp_ if _was_in_place(node) else torch.clamp,
                                                     (node.args[0],), {"min": 0})
                    node.replace_all_uses_with(new)
                    gm.graph.erase_node(node)
            gm.recompile()
            return gm.forward
        answer = relu_to_clamp
    else:
        answer = make_swap(spellings=tuple(s for s in _EVERY_RELU if s is not spelling))
    result = expect_wrong("lab08.2", answer)
    assert "a relu is still in the graph: the in-place" in result.en and named in result.en and named in result.zh


def test_lab08_3_returning_none_over_the_limit_is_named():
    def make(n):
        def backend(gm, example_inputs):
            if sum(1 for node in gm.graph.nodes if node.op.startswith("call_")) > n:
                return None
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", make)
    assert "returned None instead of raising GraphTooLarge" in result.en and "而没有抛出 GraphTooLarge" in result.zh
    assert "AssertionError" not in result.en and result.got[0] == "returned None"


def test_lab08_1_one_list_shared_by_every_name_is_named():
    # dict.fromkeys(names, []): every key holds the same list (it read as "a name that only starts with 'h'")
    result = expect_wrong("lab08.1", _recording_with(store=lambda names: dict.fromkeys(names, [])))
    assert "share one list object" in result.en and "共用同一个列表对象" in result.zh
    assert "only starts with" not in result.en


def test_lab08_3_refusing_only_when_the_compiled_model_runs_is_named():
    def make(n):
        def backend(gm, example_inputs):
            ops = sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))
            if ops > n:
                def refuse(*args):
                    raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
                return refuse
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", make)
    assert "returned a function that raises GraphTooLarge when it is called" in result.en
    assert "返回的函数在被调用时才抛出 GraphTooLarge" in result.zh


def _swap_placed(where, in_place_if=_was_in_place):
    """Swap every relu for a clamp inserted after ``where(node)``, in place where ``in_place_if(node)``."""
    return _swap_with(lambda in_place: torch.clamp_ if in_place else torch.clamp, where=where, in_place=in_place_if)


def test_lab08_2_an_in_place_clamp_placed_before_its_relu_is_named():
    # inserted right after the relu's input: y = h * 2 now reads the clamped h
    # (witness: h = x * 1.0; y = h * 2; h.relu_(); return y + h, x = [-2, -1, 0.5, 3]: eager y + h = [-4, -2, 1.5, 9])
    result = expect_wrong("lab08.2", _swap_placed(lambda node: node.args[0]))
    assert "sits earlier in the graph than the relu it replaces" in result.en
    assert "比它替换的 relu 更靠前" in result.zh
    assert "h.relu_()" in result.tried[0] and "y = h * 2" in result.tried[1]


def test_lab08_2_clamping_in_place_when_nothing_else_reads_the_input_is_named():
    # "no one reads it again, so in place is safe": but the caller's x (or the model's weight) is read by the caller
    answer = _swap_placed(lambda node: node, lambda node: _was_in_place(node) or len(node.args[0].users) == 1)
    result = expect_wrong("lab08.2", answer)
    assert "F.relu(self.w)" in result.tried[0]
    assert ("caller's x differs" in result.en and "调用方的 x" in result.zh) or \
        ("changed the model's own w" in result.en and "修改了模型自己的 w" in result.zh)


def test_lab08_2_clamping_a_parameter_in_place_is_named():
    # only the parameter's relu clamped in place: the caller's x is fine, the model's weight is not
    answer = _swap_placed(lambda node: node,
                          lambda node: _was_in_place(node) or "parameters_w" in node.args[0].name)
    result = expect_wrong("lab08.2", answer)
    assert "changed the model's own w" in result.en and "修改了模型自己的 w" in result.zh


def test_lab08_3_skipping_unread_ops_unless_in_place_is_named():
    # keeps add_ and mul_ (names end in _) but drops y[0] = 0.0 (operator.setitem) and the no_grad switches
    def count(gm):
        return sum(1 for n in gm.graph.nodes if n.op.startswith("call")
                   and (n.users or str(getattr(n.target, "__name__", n.target)).endswith("_")))
    result = expect_wrong("lab08.3", _limited_by(count))
    assert "unless their name ends in _" in result.en and "名字又不以 _ 结尾" in result.zh
    assert "setitem" in result.en and "_set_grad_enabled" in result.zh


def test_lab08_3_counting_distinct_names_is_named():
    import re as _re

    def count(gm):
        return len({_re.sub(r"_\d+$", "", n.name) for n in gm.graph.nodes if n.op.startswith("call")})
    result = expect_wrong("lab08.3", _limited_by(count))
    assert "count each kind of op once" in result.en and "只算了一次" in result.zh


def test_lab08_2_clamping_in_place_a_view_nothing_else_reads_is_named():
    # fourth attack: "in place when the input is an intermediate node with one user" passes every placeholder probe,
    # but x[0] and w[:4].view(-1) share the caller's and the model's memory
    answer = _swap_placed(lambda node: node,
                          lambda node: _was_in_place(node) or (node.args[0].op != "placeholder"
                                                               and len(node.args[0].users) == 1))
    result = expect_wrong("lab08.2", answer)
    assert "torch.relu(x[0])" in result.tried[0]
    assert ("caller's x differs" in result.en and "调用方的 x" in result.zh) or \
        ("changed the model's own w" in result.en and "修改了模型自己的 w" in result.zh)


@pytest.mark.parametrize("task_id, answer", [
    ("lab08.2", lambda gm, example_inputs: gm.forward),  # a backend that changes nothing
    ("lab08.3", lambda n: (lambda gm, example_inputs: gm.forward)),  # never refuses
], ids=["swap", "limit"])
def test_lab08_a_notebook_that_turned_dynamo_off_still_gets_its_answer_checked(task_id, answer):
    # fourth attack: with force_eager (or config.disable) left on by the notebook, no backend was ever called
    torch.compiler.set_stance("force_eager")
    try:
        result = expect_wrong(task_id, answer)
    finally:
        torch.compiler.set_stance("default")
    assert "your notebook has changed some of Dynamo's settings" in result.en
    assert "你的笔记本修改了 Dynamo 的部分设置" in result.zh


def test_lab08_1_the_reference_passes_with_dynamo_disabled_in_the_notebook():
    answer = solution("lab08", "make_recording_backend")  # the solution notebook's cells compile too
    with torch._dynamo.config.patch(disable=True):
        expect_passed("lab08.1", answer)


def test_lab08_an_answer_that_leaves_dynamo_disabled_is_named():
    def disabling(gm, example_inputs):
        torch._dynamo.config.suppress_errors = True
        return gm.forward
    result = expect_wrong("lab08.2", disabling)
    assert "for the whole process" in result.en and "整个进程的 Dynamo 设置" in result.zh
    assert "suppress_errors" in result.got


def test_lab08_3_a_limit_of_zero_is_a_limit():
    def zero_is_no_limit(n):
        def backend(gm, example_inputs):
            ops = sum(1 for node in gm.graph.nodes if node.op.startswith("call"))
            if n and ops > n:
                raise RuntimeError(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", zero_is_no_limit)
    assert "make_limited_backend(0)" in result.tried[0]


# -- found by the fifth attack (issue 30) ------------------------------------------------------

def test_lab08_1_a_recorder_returning_a_view_of_t_is_named():
    # values and in-place changes agree, but the model that returns its input no longer returns x itself
    result = expect_wrong("lab08.1", _recording_with(give=lambda t, kept: t.view_as(t)))
    assert "returns its input x itself" in result.en and "out is not x" in result.got[0]
    assert "返回的是输入 x 本身" in result.zh


def test_lab08_1_a_recorder_named_after_its_node_is_named():
    # add_submodule("meta", ...) clashes with GraphModule.meta
    result = expect_wrong("lab08.1", make_recording_backend_named_after_node)
    assert "add_submodule refused a name" in result.en and "code, graph, meta" in result.got[0]
    assert "add_submodule 拒绝了一个名字" in result.zh


def make_recording_backend_named_after_node(names):
    return make_recording_backend(names, submodule=lambda node: node.name)


def test_lab08_1_storing_a_squeezed_copy_is_named():
    # every other probe has 2 or more rows; the attribute-named model is called with one
    result = expect_wrong("lab08.1", _recording_with(keep=lambda t: t.detach().clone().squeeze()))
    assert "'meta'" in result.en and "shape (3,) instead of (1, 3)" in result.got[0]


def test_lab08_3_a_count_that_counts_call_module_twice_is_named_as_a_wrong_count():
    def make(n):
        def backend(gm, example_inputs):
            ops = sum(2 if node.op == "call_module" else 1 for node in gm.graph.nodes if node.op.startswith("call_"))
            if ops > n:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend
    result = expect_wrong("lab08.3", make)
    assert "it says 6 where the graph has 4 ops" in result.en and "它写的是 6，而计算图有 4 个算子" in result.zh


# -- found by the sixth attack (issue 30) ------------------------------------------------------

def test_lab08_1_a_recorder_returning_a_contiguous_copy_is_caught():
    # every earlier probe value was contiguous, so t.contiguous() was t itself
    result = expect_wrong("lab08.1", _recording_with(give=lambda t, kept: t.contiguous()))
    assert "graph = meta[:, ::2]" in result.tried[0] and "output changed" in result.en


def test_lab08_1_new_lists_at_every_backend_call_are_named_even_when_one_ends_empty():
    def make(names):
        backend, store = make_recording_backend(names)

        def fresh_lists(gm, example_inputs):
            for name in names:
                store[name] = []
            return backend(gm, example_inputs)

        return fresh_lists, store

    result = expect_wrong("lab08.1", make)
    assert "is not the list store started with" in result.en and "已经不是 store 最初的那个列表" in result.zh


def test_lab08_1_dead_code_elimination_after_recording_is_named():
    def make(names):
        backend, store = make_recording_backend(names)

        def then_dce(gm, example_inputs):
            forward = backend(gm, example_inputs)
            gm.graph.eliminate_dead_code()
            gm.recompile()
            return forward

        return then_dce, store

    result = expect_wrong("lab08.1", make)
    assert "removed node(s)" in result.en and "eliminate_dead_code" in result.en and "删除了节点" in result.zh


def test_lab08_2_dead_code_elimination_after_the_swap_is_pointed_at():
    swap = make_swap()

    def then_dce(gm, example_inputs):
        swap(gm, example_inputs)
        gm.graph.eliminate_dead_code()
        gm.recompile()
        return gm.forward

    result = expect_wrong("lab08.2", then_dce)
    assert "eliminate_dead_code" in result.en and "eliminate_dead_code" in result.zh


# -- found by the seventh attack (issue 30) ------------------------------------------------------

def test_lab08_1_skipping_a_named_node_nobody_reads_is_named():
    result = expect_wrong("lab08.1", _recording_with(match=lambda node, store: node.name in store and node.users))
    assert "no node reads 'mul_'" in result.en and "没有节点读取 'mul_'" in result.zh


def test_lab08_1_a_graph_rebuilt_with_a_transformer_passes():
    # the rebuilt graph's nodes get new names: not a removal
    from torch import fx

    def make(names):
        store = {name: [] for name in names}

        class Rec(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.name = name

            def forward(self, t):
                store[self.name].append(t.detach().clone())
                return t

        def backend(gm, example_inputs):
            class Recording(fx.Transformer):
                def run_node(self, node):
                    value = super().run_node(node)
                    if node.name in names and node.op != "output":
                        gm.add_submodule(f"rec_{node.name}", Rec(node.name))
                        return self.call_module(f"rec_{node.name}", (value,), {})
                    return value
            gm.graph = Recording(gm).transform().graph
            gm.recompile()
            return gm.forward
        return backend, store

    expect_passed("lab08.1", make)



# -- found by the eighth attack (issue 30) -------------------------------------------------------

def test_lab08_2_a_forward_taken_before_the_edits_is_named():
    swap = make_swap(recompile=False)

    def stale(gm, example_inputs):
        before = gm.forward
        swap(gm, example_inputs)
        gm.recompile()
        return before

    result = expect_wrong("lab08.2", stale)
    assert "taken before gm.recompile()" in result.en and "gm.recompile() 之前取得的" in result.zh


def test_lab08_1_a_forward_taken_before_the_edits_is_named():
    def make(names):
        backend, store = make_recording_backend(names)

        def stale(gm, example_inputs):
            before = gm.forward
            backend(gm, example_inputs)
            return before

        return stale, store

    result = expect_wrong("lab08.1", make)
    assert "taken before gm.recompile()" in result.en


def test_lab08_1_recording_only_without_gradients_is_named():
    result = expect_wrong("lab08.1", _recording_with(
        add=lambda values, kept: None if kept.requires_grad else values.append(kept),
        keep=lambda t: t.detach().clone() if not t.requires_grad else t.clone()))
    assert "with autograd on, the store did not get one value per name" in result.en
    assert "开启 autograd 时" in result.zh


# -- found by the ninth attack (issue 30) --------------------------------------------------------

def test_lab08_2_the_forward_taken_after_recompile_then_printing_the_code_passes():
    # printing gm.code after recompile() replaces the class's forward; the lazy forward taken before runs
    # the current code all the same
    swap = make_swap()

    def prints(gm, example_inputs):
        swap(gm, example_inputs)
        forward = gm.forward
        str(gm.code)
        return forward

    expect_passed("lab08.2", prints)


def test_lab08_3_one_limit_shared_by_every_backend_is_named():
    def make(n):
        def backend(gm, example_inputs):
            ops = sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))
            if ops > backend.limit:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {backend.limit}")
            return gm.forward
        backend.limit = n
        return backend
    shared = make(0)

    def make_shared(n):
        shared.limit = n
        return shared

    result = expect_wrong("lab08.3", make_shared)
    assert "the backends share one limit" in result.en and "共用了同一个上限" in result.zh


def test_lab08_3_running_the_graph_on_the_callers_tensors_is_named():
    def runs_it(n):
        def backend(gm, example_inputs):
            gm(*example_inputs)  # "just to see it runs"
            ops = sum(1 for node in gm.graph.nodes if node.op.startswith("call_"))
            if ops > n:
                raise GraphTooLarge(f"graph has {ops} ops, more than the limit of {n}")
            return gm.forward
        return backend

    result = expect_wrong("lab08.3", runs_it)
    assert "ran the graph itself on example_inputs" in result.en and "x is 4" in result.got[0]
