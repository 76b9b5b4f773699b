"""Checkers of lab03 (walking an FX graph, building one by hand): the solutions pass, other right
answers pass, stubs are not implemented, and each plausible wrong answer is rejected by name."""
from __future__ import annotations

import copy
import operator
from collections import Counter

import pytest
import torch
from torch import fx, nn

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint, zoo
from fxcourse._lang import text
from fxcourse.checks import task_ids


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# ------------------------------------------------------------------ the solutions pass


@pytest.mark.parametrize("task_id, name", [
    ("lab03.1", "op_histogram"), ("lab03.2", "find_modules"), ("lab03.3", "ShapeRecorder"),
    ("lab03.4", "build_graph"),
])
def test_solution_passes(task_id, name):
    expect_passed(task_id, solution("lab03", name))


class StubRecorder(fx.Interpreter):
    def run_node(self, n):
        raise NotImplementedError("replace this line with your code")


@pytest.mark.parametrize("task_id, answer", [
    ("lab03.1", _stub), ("lab03.2", _stub), ("lab03.3", StubRecorder), ("lab03.4", _stub),
])
def test_stubs_are_not_implemented(task_id, answer):
    assert check(task_id, answer).status == "not_implemented"


@pytest.mark.parametrize("task_id", ["lab03.1", "lab03.2", "lab03.3", "lab03.4"])
def test_every_task_has_a_hint_ladder_without_code(task_id):
    assert task_id in task_ids()
    steps = [hint(task_id, level=k) for k in (1, 2)]
    assert all(step.level for step in steps)
    assert any("lecture" in step.en.lower() for step in steps)
    for step in steps:
        assert "=" not in step.en and "def " not in step.en


# ------------------------------------------------------------------ lab03.1


def _histogram_by(name):
    def answer(gm):
        return Counter((n.op, n.target if isinstance(n.target, str) else name(n.target)) for n in gm.graph.nodes)
    return answer


def test_lab03_1_accepts_a_counter_and_other_spellings_of_function_targets():
    from torch.fx.node import _get_qualified_name

    from fxcourse.viewers._node_text import qualified_name

    expect_passed("lab03.1", _histogram_by(_get_qualified_name))
    expect_passed("lab03.1", _histogram_by(qualified_name))


def test_lab03_1_rejects_str_of_a_function():
    result = expect_wrong("lab03.1", _histogram_by(str))
    assert "<built-in function add>" in result.en and "repr" in result.zh
    assert result.tried and result.expected


def test_lab03_1_rejects_bare_function_names():
    result = expect_wrong("lab03.1", _histogram_by(lambda t: t.__name__))
    assert "ambiguous" in result.en and "歧义" in result.zh


def test_lab03_1_rejects_node_names():
    result = expect_wrong("lab03.1", lambda gm: Counter((n.op, n.name) for n in gm.graph.nodes))
    assert "node.name" in result.en and "node.name" in result.zh


def test_lab03_1_rejects_function_objects():
    result = expect_wrong("lab03.1", lambda gm: Counter((n.op, n.target) for n in gm.graph.nodes))
    assert "function object" in result.en and "函数对象" in result.zh


def test_lab03_1_rejects_leaving_out_placeholder_and_output():
    def calls_only(gm):
        full = solution("lab03", "op_histogram")(gm)
        return {k: v for k, v in full.items() if k[0] not in ("placeholder", "output")}
    result = expect_wrong("lab03.1", calls_only)
    assert "placeholder and output" in result.en and "placeholder 和 output" in result.zh


def test_lab03_1_rejects_counting_by_opcode_only():
    result = expect_wrong("lab03.1", lambda gm: Counter(n.op for n in gm.graph.nodes))
    assert "pair" in result.en and "二元组" in result.zh


def test_lab03_1_rejects_counting_each_target_once():
    result = expect_wrong("lab03.1", lambda gm: {k: 1 for k in solution("lab03", "op_histogram")(gm)})
    assert "every count is 1" in result.en and "not how many nodes" in result.en
    assert "每个计数都是 1" in result.zh and "有多少个节点" in result.zh
    assert "fc" in result.expected


# ------------------------------------------------------------------ lab03.2


def _calls(gm, kind):
    return [n.target for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(n.target), kind)]


def test_lab03_2_accepts_a_tuple():
    expect_passed("lab03.2", lambda gm, kind: tuple(_calls(gm, kind)))


def test_lab03_2_rejects_named_modules():
    result = expect_wrong("lab03.2", lambda gm, k: [name for name, m in gm.named_modules() if name and isinstance(m, k)])
    assert "no node calls" in result.en and "没有任何节点调用" in result.zh


def test_lab03_2_rejects_one_entry_per_module():
    result = expect_wrong("lab03.2", lambda gm, k: list(dict.fromkeys(_calls(gm, k))))
    assert "called twice must appear twice" in result.en and "出现两次" in result.zh


def test_lab03_2_rejects_node_names():
    result = expect_wrong("lab03.2", lambda gm, k: [
        n.name for n in gm.graph.nodes if n.op == "call_module" and isinstance(gm.get_submodule(n.target), k)])
    assert "node names" in result.en and "节点名" in result.zh


def test_lab03_2_rejects_an_exact_type_test():
    result = expect_wrong("lab03.2", lambda gm, k: [
        n.target for n in gm.graph.nodes if n.op == "call_module" and type(gm.get_submodule(n.target)) is k])
    assert "instance of module_type" in result.en and "实例" in result.zh


def test_lab03_2_rejects_sorted_targets():
    result = expect_wrong("lab03.2", lambda gm, k: sorted(_calls(gm, k)))
    assert "graph order" in result.en and "顺序" in result.zh


# ------------------------------------------------------------------ lab03.3


class _Recorder(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.shapes = {}


class CallsOnly(_Recorder):
    def run_node(self, n):
        value = super().run_node(n)
        if n.op.startswith("call_") and isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)
        return value


class Lists(_Recorder):
    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = list(value.shape)
        return value


class Sizes(_Recorder):  # a torch.Size is accepted
    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = value.shape
        return value


class NoReturn(_Recorder):
    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)


class MetaOnly(_Recorder):
    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            n.meta["shape"] = tuple(value.shape)
        return value


class EveryValue(_Recorder):
    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)
        elif isinstance(value, tuple):
            self.shapes[n.name] = tuple(tuple(v.shape) for v in value)
        return value


class InputShapes(_Recorder):
    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            args, _ = self.fetch_args_kwargs_from_env(n)
            first = args[0] if args and isinstance(args[0], torch.Tensor) else value
            self.shapes[n.name] = tuple(first.shape)  # the node's input, not its result
        return value


def test_lab03_3_accepts_torch_size():
    expect_passed("lab03.3", Sizes)


def test_lab03_3_rejects_recording_call_nodes_only():
    result = expect_wrong("lab03.3", CallsOnly)
    assert "placeholder" in result.en and "placeholder" in result.zh


def test_lab03_3_rejects_lists():
    result = expect_wrong("lab03.3", Lists)
    assert "not a list" in result.en and "list" in result.zh


def test_lab03_3_rejects_a_run_node_that_returns_nothing():
    result = expect_wrong("lab03.3", NoReturn)
    assert "returned None" in result.en and "None" in result.zh
    assert "NoneType" in result.got


def test_lab03_3_rejects_writing_node_meta_only():
    result = expect_wrong("lab03.3", MetaOnly)
    assert "still empty" in result.en and "node.meta" in result.zh


def test_lab03_3_rejects_recording_tuples():
    result = expect_wrong("lab03.3", EveryValue)
    assert "not a tensor" in result.en and "不是张量" in result.zh


def test_lab03_3_rejects_the_shapes_of_node_inputs():
    result = expect_wrong("lab03.3", InputShapes)
    assert "some shapes differ" in result.en and "形状不对" in result.zh


def test_lab03_3_wants_the_class():
    result = expect_wrong("lab03.3", Sizes(fx.symbolic_trace(lambda x: x + 1)))
    assert "class" in result.en and "类" in result.zh


# ------------------------------------------------------------------ lab03.4


def _build(*, sub=operator.sub, swap=False, output=True, root_of=lambda root: root, tuple_out=False,
           method=False):
    def build_graph(root):
        graph = fx.Graph()
        x = graph.placeholder("x")
        y = graph.placeholder("y")
        args = (y, x) if swap else (x, y)
        d = graph.call_method("sub", args) if method else graph.call_function(sub, args)
        h = graph.call_module("proj", (d,))
        scale = graph.get_attr("scale")
        out = graph.call_function(operator.mul, (h, scale))
        if output:
            graph.output((out,) if tuple_out else out)
        return fx.GraphModule(root_of(root), graph)
    return build_graph


def test_lab03_4_accepts_torch_sub_and_a_dict_of_the_roots_parts():
    expect_passed("lab03.4", _build(sub=torch.sub))
    expect_passed("lab03.4", _build(root_of=lambda root: {"proj": root.proj, "scale": root.scale}))


def test_lab03_4_a_method_call_for_the_subtraction_is_not_a_call_function_node():
    result = expect_wrong("lab03.4", _build(method=True))
    assert "two call_function nodes" in result.en and "两个 call_function 节点" in result.zh


def test_lab03_4_rejects_a_graph_without_output():
    result = expect_wrong("lab03.4", _build(output=False))
    assert "no output node" in result.en and "output 节点" in result.zh


def test_lab03_4_rejects_swapped_operands():
    result = expect_wrong("lab03.4", _build(swap=True))
    assert "swapped" in result.en and "交换" in result.zh
    assert "zero row" in text(result.tried)


def test_lab03_4_rejects_placeholders_in_the_wrong_order():
    def build_graph(root):
        graph = fx.Graph()
        y = graph.placeholder("y")
        x = graph.placeholder("x")
        h = graph.call_module("proj", (graph.call_function(operator.sub, (x, y)),))
        graph.output(graph.call_function(operator.mul, (h, graph.get_attr("scale"))))
        return fx.GraphModule(root, graph)
    result = expect_wrong("lab03.4", build_graph)
    assert "placeholders' order" in result.en and "placeholder" in result.zh


def test_lab03_4_rejects_an_empty_root():
    result = expect_wrong("lab03.4", _build(root_of=lambda root: nn.Module()))
    assert "looked up in the root" in result.en and "root" in result.zh
    assert "proj" in result.got


def test_lab03_4_rejects_a_root_without_scale():
    result = expect_wrong("lab03.4", _build(root_of=lambda root: {"proj": root.proj}))
    assert "looked up in the root" in result.en and "scale" in result.got


def test_lab03_4_rejects_the_notebooks_own_parts():
    other = zoo.GraphParts(4)
    result = expect_wrong("lab03.4", _build(root_of=lambda root: other))
    assert "another module" in result.en and "别的模块" in result.zh


def test_lab03_4_rejects_a_one_tuple_output():
    result = expect_wrong("lab03.4", _build(tuple_out=True))
    assert "sequence of one tensor" in result.en and "序列" in result.zh


def test_lab03_4_rejects_a_scale_baked_in_as_a_constant():
    def build_graph(root):
        graph = fx.Graph()
        x, y = graph.placeholder("x"), graph.placeholder("y")
        h = graph.call_module("proj", (graph.call_function(operator.sub, (x, y)),))
        graph.output(graph.call_function(operator.mul, (h, 2.0)))
        return fx.GraphModule(root, graph)
    result = expect_wrong("lab03.4", build_graph)
    assert "get_attr" in result.en and "get_attr" in result.zh


def test_lab03_4_rejects_returning_the_graph():
    result = expect_wrong("lab03.4", lambda root: _build()(root).graph)
    assert "Graph cannot run" in result.en and "不能运行" in result.zh


def test_lab03_4_rejects_tracing_the_parts():
    result = expect_wrong("lab03.4", lambda root: fx.symbolic_trace(root))
    assert "nothing to trace" in result.en and "追踪" in result.zh


def _target_name(t):
    return t if isinstance(t, str) else f"{t.__module__}.{t.__name__}"


def test_lab03_1_editing_the_graph_while_counting_is_wrong():
    def counts_then_prunes(gm):
        counts = Counter((n.op, _target_name(n.target)) for n in gm.graph.nodes)
        gm.graph.erase_node(next(n for n in gm.graph.nodes if n.op == "output"))
        return dict(counts)

    result = expect_wrong("lab03.1", counts_then_prunes)
    assert "changed the graph it was given" in result.en and "修改了传给它的计算图" in result.zh


class _TargetKeyed(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.shapes = {}

    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.target] = tuple(value.shape)
        return value


def test_lab03_3_keys_by_target_are_named():
    result = expect_wrong("lab03.3", _TargetKeyed)
    assert "node targets" in result.en and "target" in result.zh and "node.name" in result.zh


class _SharedShapes(fx.Interpreter):
    shapes: dict = {}  # one dict for every instance

    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)
        return value


def test_lab03_3_a_dict_shared_by_every_recorder_is_named():
    _SharedShapes.shapes = {}
    result = expect_wrong("lab03.3", _SharedShapes)
    assert "left from another recorder" in result.en and "另一个记录器" in result.zh


def _by_hand(root, *, sub=operator.sub, method=False, root_for_module=None):
    g = fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    d = g.call_method("sub", (x, y)) if method else g.call_function(sub, (x, y))
    p = g.call_module("proj", (d,))
    s = g.get_attr("scale")
    g.output(g.call_method("mul", (p, s)) if method else g.call_function(operator.mul, (p, s)))
    return fx.GraphModule(root if root_for_module is None else root_for_module, g)


def test_lab03_4_call_method_nodes_are_not_what_the_lab_asks():
    result = expect_wrong("lab03.4", lambda root: _by_hand(root, method=True))
    assert "call_function nodes" in result.en and "call_function 节点" in result.zh


def test_lab03_4_tracing_a_wrapper_is_not_building():
    def traced(root):
        class Wrapper(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj, self.scale = root.proj, root.scale

            def forward(self, x, y):
                return self.proj(x - y) * self.scale
        return fx.symbolic_trace(Wrapper())

    result = expect_wrong("lab03.4", traced)
    assert "recorded by a tracer" in result.en and "追踪器记录下来的" in result.zh


def test_lab03_4_a_copy_of_the_root_is_named():
    result = expect_wrong("lab03.4", lambda root: _by_hand(root, root_for_module=copy.deepcopy(root)))
    assert "copies of the root's weights" in result.en and "副本" in result.zh


def test_lab03_4_adding_instead_of_subtracting_says_what_differs():
    result = expect_wrong("lab03.4", lambda root: _by_hand(root, sub=operator.add))
    assert "differs from root.proj(x - y) * root.scale" in result.en and "your GraphModule" not in result.zh


def test_lab03_4_a_dict_of_the_roots_own_parts_passes():
    def from_dict(root):
        return _by_hand(root, root_for_module={"proj": root.proj, "scale": root.scale})

    expect_passed("lab03.4", from_dict)


# ------------------------------------------------------------------ one language at a time
ONE_WRONG_ANSWER = {
    "lab03.1": _histogram_by(str),
    "lab03.2": lambda gm, k: list(dict.fromkeys(_calls(gm, k))),
    "lab03.3": NoReturn,
    "lab03.4": _build(output=False),
}


def test_every_lab03_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab03.")]


@pytest.mark.parametrize("task_id", sorted(ONE_WRONG_ANSWER))
def test_lab03_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, ONE_WRONG_ANSWER[task_id], monkeypatch)


# ------------------------------------------------------------------ issue 30: classes the probes missed


def _spelled(t):
    return t if isinstance(t, str) else f"{t.__module__}.{t.__name__}"


def _counts_where(keep):
    def op_histogram(gm):
        return dict(Counter((n.op, _spelled(n.target)) for n in gm.graph.nodes if keep(n)))
    return op_histogram


def test_lab03_1_leaving_out_only_the_output_node_is_named():
    result = expect_wrong("lab03.1", _counts_where(lambda n: n.op != "output"))
    assert "output node is missing" in result.en and "少了 output 节点" in result.zh


def test_lab03_1_leaving_out_only_the_placeholders_is_named():
    result = expect_wrong("lab03.1", _counts_where(lambda n: n.op != "placeholder"))
    assert "placeholder nodes" in result.en and "少了 placeholder 节点" in result.zh


def test_lab03_1_leaving_out_get_attr_nodes_is_named():
    result = expect_wrong("lab03.1", _counts_where(lambda n: n.op != "get_attr"))
    assert "get_attr nodes" in result.en and "少了 get_attr 节点" in result.zh


def test_lab03_1_skipping_nodes_without_users_is_named():
    # every probe of the first round had no dead node, so this passed; a conv call whose result is thrown away
    result = expect_wrong("lab03.1", _counts_where(lambda n: n.op == "output" or bool(n.users)))
    assert "nothing uses" in result.en and "dead-code elimination" in result.en
    assert "死代码消除" in result.zh and "never used" in text(result.tried)


def test_lab03_1_counting_after_dead_code_elimination_of_a_copy_is_named():
    def op_histogram(gm):
        pruned = copy.deepcopy(gm)
        pruned.graph.eliminate_dead_code()
        return dict(Counter((n.op, _spelled(n.target)) for n in pruned.graph.nodes))
    result = expect_wrong("lab03.1", op_histogram)
    assert "dead-code elimination" in result.en and "死代码消除" in result.zh


def _find_by_last_part(first_wins):
    def find_modules(gm, module_type):
        modules = {}
        for name, m in gm.named_modules():
            if first_wins:
                modules.setdefault(name.split(".")[-1], m)
            else:
                modules[name.split(".")[-1]] = m
        return [n.target for n in gm.graph.nodes
                if n.op == "call_module" and isinstance(modules[n.target.split(".")[-1]], module_type)]
    return find_modules


@pytest.mark.parametrize("first_wins", [False, True])
def test_lab03_2_a_module_found_by_the_last_part_of_its_path_is_named(first_wins):
    # resnet18 and the other probes have no two modules of different types under one last name: this passed
    result = expect_wrong("lab03.2", _find_by_last_part(first_wins))
    assert "last part of its dotted target" in result.en and "block.conv" in result.en
    assert "最后一段" in result.zh and "完整的带点路径" in result.zh


def test_lab03_2_a_top_level_attribute_by_the_last_name_is_named():
    def find_modules(gm, module_type):
        return [n.target for n in gm.graph.nodes if n.op == "call_module"
                and isinstance(getattr(gm, n.target.split(".")[-1], None) or gm.get_submodule(n.target), module_type)]
    result = expect_wrong("lab03.2", find_modules)
    assert "last part of its dotted target" in result.en and "最后一段" in result.zh


def test_lab03_2_dropping_a_call_whose_output_is_unused_is_named():
    def find_modules(gm, module_type):
        pruned = copy.deepcopy(gm)
        pruned.graph.eliminate_dead_code()
        return [n.target for n in pruned.graph.nodes
                if n.op == "call_module" and isinstance(pruned.get_submodule(n.target), module_type)]
    result = expect_wrong("lab03.2", find_modules)
    assert "`aux`" in result.en and "nothing uses" in result.en and "死代码消除" in result.zh


def test_lab03_2_a_lookup_through_named_modules_by_full_path_passes():
    def find_modules(gm, module_type):
        modules = dict(gm.named_modules())
        found = []
        for node in gm.graph.nodes:
            if node.op == "call_module" and isinstance(modules[node.target], module_type):
                found.append(node.target)
        return tuple(found)
    expect_passed("lab03.2", find_modules)


def _recorder_keyed_by(key):
    class Recorder(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes = {}

        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                self.shapes[key(n)] = tuple(value.shape)
            return value
    return Recorder


@pytest.mark.parametrize("key", [lambda n: str(n.target), lambda n: _spelled(n.target)],
                         ids=["str(node.target)", "module.name of the target"])
def test_lab03_3_keys_spelled_from_the_target_are_named_as_targets(key):
    # issue 30: these were told the dict "was left from another recorder's run"
    result = expect_wrong("lab03.3", _recorder_keyed_by(key))
    assert "node targets" in result.en and "another recorder" not in result.en
    assert "target" in result.zh and "node.name" in result.zh and "另一个记录器" not in result.zh


def test_lab03_3_node_objects_as_keys_are_named():
    result = expect_wrong("lab03.3", _recorder_keyed_by(lambda n: n))
    assert "Node objects" in result.en and "Node 对象" in result.zh


def test_lab03_3_skipping_placeholders_is_named():
    class Recorder(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes = {}

        def run_node(self, n):
            value = super().run_node(n)
            if n.op != "placeholder" and isinstance(value, torch.Tensor):
                self.shapes[n.name] = tuple(value.shape)
            return value
    result = expect_wrong("lab03.3", Recorder)
    assert "placeholder" in result.en and "placeholder" in result.zh and "每个节点" in result.zh


def test_lab03_3_a_recorder_that_overrides_each_opcode_passes():
    class Recorder(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes = {}

        def run_node(self, n):
            out = super().run_node(n)
            self.shapes.update({n.name: torch.Size(out.shape)} if torch.is_tensor(out) else {})
            return out
    expect_passed("lab03.3", Recorder)


# ------------------------------------------------------------------ second attack: letter case, a recorder run twice


def test_lab03_1_lowercased_targets_are_named():
    # a submodule named Head counted as 'head' (and an input X as 'x')
    result = expect_wrong("lab03.1", lambda gm: Counter(
        (n.op, (n.target if isinstance(n.target, str) else _spelled(n.target)).lower()) for n in gm.graph.nodes))
    assert "letter case" in result.en and "case-sensitive" in result.en
    assert "大小写" in result.zh and "'Head'" in result.zh
    assert "Head" in text(result.tried)


def test_lab03_3_a_recorder_that_keeps_the_first_runs_shapes_is_named():
    # setdefault: run on batch 2, then batch 7, still reports batch 2
    class Recorder(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes = {}

        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                self.shapes.setdefault(n.name, tuple(value.shape))
            return value
    result = expect_wrong("lab03.3", Recorder)
    assert "first run" in result.en and "overwritten" in result.en
    assert "第一次运行" in result.zh and "覆盖" in result.zh
    assert "(7, 8)" in text(result.tried) and "(7, 8)" in result.expected


def test_lab03_3_a_recorder_that_records_only_new_names_is_named():
    # a recorder that skips a name it has seen (a "seen" set kept on the instance) fails the same way
    class Recorder(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes, self.seen = {}, set()

        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor) and n.name not in self.seen:
                self.seen.add(n.name)
                self.shapes[n.name] = tuple(value.shape)
            return value
    result = expect_wrong("lab03.3", Recorder)
    assert "first run" in result.en and "第一次运行" in result.zh


def test_lab03_3_a_recorder_that_starts_each_run_afresh_passes():
    class Recorder(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes = {}

        def run(self, *args, **kwargs):
            self.shapes = {}
            return super().run(*args, **kwargs)

        def run_node(self, n):
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                self.shapes[n.name] = tuple(value.shape)
            return value
    expect_passed("lab03.3", Recorder)


# ------------------------------------------------------------------ third attack pass


def test_lab03_1_float_counts_are_named_as_such_not_as_missing_nodes():
    def float_counts(gm):
        counts = {}
        for n in gm.graph.nodes:
            key = (n.op, n.target if isinstance(n.target, str) else f"{n.target.__module__}.{n.target.__name__}")
            counts[key] = counts.get(key, 0) + 1.0
        return counts
    result = expect_wrong("lab03.1", float_counts)
    assert "not ints" in result.en and "不是 int" in result.zh
    assert "missing" not in result.en and "少了" not in result.zh


def test_lab03_1_a_dotted_target_cut_to_its_first_part_is_named():
    def first_part(gm):
        return Counter((n.op, (n.target.split(".")[0] if n.op == "get_attr" else n.target) if isinstance(n.target, str)
                        else f"{n.target.__module__}.{n.target.__name__}") for n in gm.graph.nodes)
    result = expect_wrong("lab03.1", first_part)
    assert "block.scale" in text(result.tried)
    assert "dotted target was cut" in result.en and "带点的 target 被截成" in result.zh


def test_lab03_2_a_method_named_like_a_submodule_is_named():
    def every_opcode(gm, module_type):
        found = []
        for n in gm.graph.nodes:
            if not isinstance(n.target, str):
                continue
            try:
                m = gm.get_submodule(n.target)
            except AttributeError:
                continue
            if isinstance(m, module_type):
                found.append(n.target)
        return found
    result = expect_wrong("lab03.2", every_opcode)
    assert ".relu()" in text(result.tried)
    assert "not a call_module node" in result.en and "call_method" in result.en
    assert "不是 call_module 的节点" in result.zh


def test_lab03_3_skipping_parameters_says_a_parameter_is_a_tensor():
    class ExactTensors(fx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.shapes = {}

        def run_node(self, n):
            value = super().run_node(n)
            if type(value) is torch.Tensor:
                self.shapes[n.name] = tuple(value.shape)
            return value
    result = expect_wrong("lab03.3", ExactTensors)
    assert "nn.Parameter" in result.en and "subclass" in result.en
    assert "Parameter 是 torch.Tensor" in result.zh


def test_lab03_4_placeholders_with_other_names_are_named():
    def build_graph(root):
        graph = fx.Graph()
        a = graph.placeholder("a")
        b = graph.placeholder("b")
        h = graph.call_module("proj", (graph.call_function(operator.sub, (a, b)),))
        graph.output(graph.call_function(operator.mul, (h, graph.get_attr("scale"))))
        return fx.GraphModule(root, graph)
    result = expect_wrong("lab03.4", build_graph)
    assert "not named x and y" in result.en and "不是 x 和 y" in result.zh
    assert "['a', 'b']" in text(result.got)
