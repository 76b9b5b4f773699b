"""Checkers of lab04 (FX passes): reference answers pass, stubs are not implemented, and the
usual mistakes get their specific hint."""
from __future__ import annotations

import copy
import operator

import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx import subgraph_rewriter

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint
from fxcourse._lang import text
from fxcourse.checks import task_ids


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# ------------------------------------------------------------------ lab04.1 answers


def _fold(conv, bn, use_conv_bias=True, affine_defaults=True):
    fused = copy.deepcopy(conv)
    with torch.no_grad():
        gamma = bn.weight if (bn.weight is not None or not affine_defaults) else torch.ones_like(bn.running_var)
        beta = bn.bias if (bn.bias is not None or not affine_defaults) else torch.zeros_like(bn.running_var)
        scale = gamma / torch.sqrt(bn.running_var + bn.eps)
        bias = conv.bias if (conv.bias is not None and use_conv_bias) else torch.zeros_like(bn.running_mean)
        fused.weight = nn.Parameter(conv.weight * scale.reshape(-1, 1, 1, 1))
        fused.bias = nn.Parameter((bias - bn.running_mean) * scale + beta)
    return fused


def _make_fuse(*, copy_first=True, check_users=True, use_conv_bias=True, dotted_setattr=False,
               recompile=True, skip_training="bn", set_eval=False, shared="both", delete_bn=False, lint=True,
               fold=None, keyword="read", check_stats=True, eval_fused=False):
    """shared: which modules must be called by one node only ("both", "conv" or None); keyword: what to do with
    a BN whose input is passed as input= ("read" it, "skip" the BN, or "crash" on args[0])."""
    def fuse_conv_bn(gm):
        if copy_first:
            gm = copy.deepcopy(gm)
        if set_eval:
            gm.eval()
        modules = dict(gm.named_modules())
        called = [n.target for n in gm.graph.nodes if n.op == "call_module"]
        for bn_node in list(gm.graph.nodes):
            if bn_node.op != "call_module" or not isinstance(modules[bn_node.target], nn.BatchNorm2d):
                continue
            if bn_node.args or keyword == "crash":
                conv_node = bn_node.args[0]
            elif keyword == "read":
                conv_node = bn_node.kwargs["input"]
            else:
                continue
            if not (isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and isinstance(modules[conv_node.target], nn.Conv2d)):
                continue
            if check_stats and modules[bn_node.target].running_var is None:
                continue
            if check_users and len(conv_node.users) != 1:
                continue
            if skip_training == "bn" and modules[bn_node.target].training:
                continue
            if skip_training == "model" and gm.training:
                continue
            if shared in ("both", "conv") and called.count(conv_node.target) != 1:
                continue
            if shared == "both" and called.count(bn_node.target) != 1:
                continue
            fused = (fold or (lambda c, b: _fold(c, b, use_conv_bias)))(modules[conv_node.target], modules[bn_node.target])
            if eval_fused:
                fused.eval()
            if dotted_setattr:
                setattr(gm, conv_node.target, fused)
            else:
                gm.set_submodule(conv_node.target, fused)
            bn_node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(bn_node)
            if delete_bn:
                gm.delete_submodule(bn_node.target)
        if lint:
            gm.graph.lint()
        if recompile:
            gm.recompile()
        return gm
    return fuse_conv_bn


# ------------------------------------------------------------------ lab04.2 answers


def _silu(x):
    return F.silu(x)


def _plain(x):
    return x * torch.sigmoid(x)


def _swapped(x):
    return torch.sigmoid(x) * x


def silu_rewrite(gm):
    return sum(len(subgraph_rewriter.replace_pattern(gm, p, _silu)) for p in (_plain, _swapped))


def silu_rewrite_one_order(gm):
    return len(subgraph_rewriter.replace_pattern(gm, _plain, _silu))


def silu_rewrite_returns_matches(gm):
    return [m for p in (_plain, _swapped) for m in subgraph_rewriter.replace_pattern(gm, p, _silu)]


# ------------------------------------------------------------------ lab04.3 answers


def _make_probes(*, clone=True, copy_first=True, keep_probe=True, every_call=True, prefix="probe_", as_float=False):
    def insert_probes(gm, names):
        class Probe(nn.Module):
            def __init__(self, records, name):
                super().__init__()
                self.records, self.name = records, name

            def forward(self, x):
                if every_call or self.name not in self.records:
                    kept = x.detach().clone() if clone else x
                    self.records[self.name] = kept.float() if as_float else kept
                return x

        probed = copy.deepcopy(gm) if copy_first else gm
        records = {}
        nodes = {n.name: n for n in probed.graph.nodes}
        for name in names:
            node = nodes[name]
            probed.add_submodule(f"{prefix}{name}", Probe(records, name))
            with probed.graph.inserting_after(node):
                probe = probed.graph.call_module(f"{prefix}{name}", (node,))
            if keep_probe:
                node.replace_all_uses_with(probe, delete_user_cb=lambda user, probe=probe: user is not probe)
            else:
                node.replace_all_uses_with(probe)
        probed.recompile()
        return probed, records
    return insert_probes


# ------------------------------------------------------------------ the solutions pass


@pytest.mark.parametrize("task_id, name", [
    ("lab04.1", "fuse_conv_bn"), ("lab04.2", "silu_rewrite"), ("lab04.3", "insert_probes"),
])
def test_solution_passes(task_id, name):
    expect_passed(task_id, solution("lab04", name))


@pytest.mark.parametrize("task_id", ["lab04.1", "lab04.2", "lab04.3"])
def test_stub_is_not_implemented(task_id):
    assert check(task_id, _stub).status == "not_implemented"


@pytest.mark.parametrize("task_id", ["lab04.1", "lab04.2", "lab04.3"])
def test_every_task_has_a_hint_ladder_that_names_a_lecture_section(task_id):
    steps = [hint(task_id, level=k) for k in (1, 2)]
    assert all(step.level for step in steps) and "Lecture 04" in steps[1].en and "第 04 讲" in steps[1].zh


# ------------------------------------------------------------------ lab04.1


def test_lab04_1_accepts_the_test_answers_own_pass_and_torchs_folding_helper():
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    expect_passed("lab04.1", _make_fuse())

    def with_helper(gm):
        gm = copy.deepcopy(gm)
        modules = dict(gm.named_modules())
        for bn_node in list(gm.graph.nodes):
            conv_node = bn_node.all_input_nodes[0] if bn_node.all_input_nodes else None
            if not (bn_node.op == "call_module" and isinstance(modules[bn_node.target], nn.BatchNorm2d)
                    and isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and isinstance(modules[conv_node.target], nn.Conv2d) and len(conv_node.users) == 1
                    and not modules[bn_node.target].training and modules[bn_node.target].track_running_stats
                    and sum(n.target == conv_node.target for n in gm.graph.nodes if n.op == "call_module") == 1):
                continue
            conv = modules[conv_node.target]
            fused = fuse_conv_bn_eval(copy.deepcopy(conv).eval(), modules[bn_node.target]).train(conv.training)
            gm.set_submodule(conv_node.target, fused)
            bn_node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(bn_node)
        gm.recompile()
        return gm
    expect_passed("lab04.1", with_helper)


def test_lab04_1_rejects_fusing_a_shared_conv():
    result = expect_wrong("lab04.1", _make_fuse(check_users=False))
    assert "SharedConv" in text(result.tried)
    assert "another user" in result.en and "其他使用者" in result.zh
    assert "max abs difference" in text(result.got)


def test_lab04_1_rejects_folding_a_bn_in_training_mode():
    result = expect_wrong("lab04.1", _make_fuse(skip_training=None))
    assert "training mode" in text(result.tried)
    assert "statistics of each batch" in result.en and "训练模式" in result.zh


def test_lab04_1_rejects_reading_the_models_mode_instead_of_each_bns():
    result = expect_wrong("lab04.1", _make_fuse(skip_training="model"))
    assert "stem[1]" in text(result.tried)
    assert "each BatchNorm's own mode" in result.en and "自己的模式" in result.zh


def test_lab04_1_rejects_switching_the_copy_to_eval_mode():
    result = expect_wrong("lab04.1", _make_fuse(set_eval=True))
    assert "training mode" in text(result.tried)
    assert "switched the train/eval mode" in result.en and "模式" in result.zh


def test_lab04_1_names_the_eval_only_helper_on_a_training_bn():
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    def helper_everywhere(gm):
        gm = copy.deepcopy(gm)
        modules = dict(gm.named_modules())
        for bn_node in list(gm.graph.nodes):
            conv_node = bn_node.args[0] if bn_node.args else None
            if (bn_node.op == "call_module" and isinstance(modules[bn_node.target], nn.BatchNorm2d)
                    and isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and isinstance(modules[conv_node.target], nn.Conv2d) and len(conv_node.users) == 1):
                gm.set_submodule(conv_node.target,
                                 fuse_conv_bn_eval(modules[conv_node.target], modules[bn_node.target]))
                bn_node.replace_all_uses_with(conv_node)
                gm.graph.erase_node(bn_node)
        gm.recompile()
        return gm
    result = expect_wrong("lab04.1", helper_everywhere)
    assert "only modules in eval mode" in result.en and "eval 模式" in result.zh


def test_lab04_1_rejects_editing_the_input_in_place():
    result = expect_wrong("lab04.1", _make_fuse(copy_first=False))
    assert "deep copy" in result.en and "深拷贝" in result.zh


def test_lab04_1_rejects_forgetting_the_conv_bias():
    result = expect_wrong("lab04.1", _make_fuse(use_conv_bias=False))
    assert "bias=True" in text(result.tried) and "own bias" in result.en and "偏置" in result.zh


def test_lab04_1_rejects_setattr_with_a_dotted_target():
    result = expect_wrong("lab04.1", _make_fuse(dotted_setattr=True))
    assert "'stem.0'" in result.en and "dotted target" in result.en and "带点" in result.zh


def test_lab04_1_rejects_forgetting_recompile():
    result = expect_wrong("lab04.1", _make_fuse(recompile=False))
    assert "not regenerated" in result.en and "recompile()" in result.zh


# ------------------------------------------------------------------ lab04.2


def test_lab04_2_accepts_the_orders_in_either_sequence():
    expect_passed("lab04.2", lambda gm: sum(len(subgraph_rewriter.replace_pattern(gm, p, _silu))
                                            for p in (_swapped, _plain)))


def test_lab04_2_rejects_one_operand_order():
    result = expect_wrong("lab04.2", silu_rewrite_one_order)
    assert "sigmoid(x) * x" in result.en and "second time" in result.en and "再调用一次" in result.zh


def test_lab04_2_rejects_returning_the_matches():
    result = expect_wrong("lab04.2", silu_rewrite_returns_matches)
    assert "number of replacements" in result.en and "次数" in result.zh


def test_lab04_2_rejects_a_pattern_written_with_torch_mul():
    def with_torch_mul(gm):
        return len(subgraph_rewriter.replace_pattern(gm, lambda x: torch.mul(x, torch.sigmoid(x)), _silu))
    result = expect_wrong("lab04.2", with_torch_mul)
    assert "operator.mul" in result.en and "operator.mul" in result.zh


def test_lab04_2_rejects_rewriting_a_product_of_two_different_values():
    def every_sigmoid_product(gm):
        count = 0
        for node in list(gm.graph.nodes):
            if node.op == "call_function" and node.target is operator.mul:
                sig = next((a for a in node.args if isinstance(a, fx.Node) and a.target is torch.sigmoid), None)
                if sig is None:
                    continue
                with gm.graph.inserting_after(node):
                    silu = gm.graph.call_function(F.silu, (sig.args[0],))
                node.replace_all_uses_with(silu)
                gm.graph.erase_node(node)
                count += 1
        gm.graph.eliminate_dead_code()
        gm.recompile()
        return count
    result = expect_wrong("lab04.2", every_sigmoid_product)
    assert "two different values" in result.en and "不是 SiLU" in result.zh


def test_lab04_2_rejects_a_hard_coded_count():
    def two(gm):
        silu_rewrite(gm)
        return 2
    result = expect_wrong("lab04.2", two)
    assert "how many replacements" in result.en and result.expected == "4"


def test_lab04_2_counting_every_silu_call_is_named():
    def count_silu_calls(gm):  # also counts the F.silu calls the graph had before
        silu_rewrite(gm)
        return sum(node.target is F.silu for node in gm.graph.nodes)
    result = expect_wrong("lab04.2", count_silu_calls)
    assert "were there before your rewrite" in result.en and "在改写之前就已存在" in result.zh
    assert result.expected == "3" and result.got == "5"


def test_lab04_2_pattern_and_replacement_swapped_is_named():
    def swapped_arguments(gm):
        return sum(len(subgraph_rewriter.replace_pattern(gm, _silu, p)) for p in (_plain, _swapped))
    result = expect_wrong("lab04.2", swapped_arguments)
    assert "the other way round" in result.en and "模式和替换写反了" in result.zh


def test_lab04_2_counting_one_order_twice_is_wrong():
    def first_order_twice(gm):  # the second order is rewritten, but the first one's count is added twice
        first = subgraph_rewriter.replace_pattern(gm, _plain, _silu)
        subgraph_rewriter.replace_pattern(gm, _swapped, _silu)
        return len(first) + len(first)
    result = expect_wrong("lab04.2", first_order_twice)
    assert "how many replacements" in result.en and "替换的次数" in result.zh
    assert result.expected == "3" and result.got == "4"


def test_lab04_2_unusual_right_answers_pass():
    def until_no_match(gm):
        total = 0
        for pattern in (_plain, _swapped):
            while found := subgraph_rewriter.replace_pattern(gm, pattern, _silu):
                total += len(found)
        return total

    def one_order_first(gm):  # turn sigmoid(x) * x into x * sigmoid(x), then rewrite that one order
        subgraph_rewriter.replace_pattern(gm, _swapped, _plain)
        return len(subgraph_rewriter.replace_pattern(gm, _plain, lambda x: F.silu(x)))

    def with_filters(gm):
        return sum(len(subgraph_rewriter.replace_pattern_with_filters(gm, p, _silu, match_filters=[]))
                   for p in (_plain, _swapped))

    for answer in (until_no_match, one_order_first, with_filters):
        expect_passed("lab04.2", answer)


# ------------------------------------------------------------------ lab04.3


def test_lab04_3_rejects_a_probe_without_a_copy():
    result = expect_wrong("lab04.3", _make_probes(clone=False))
    assert "inplace=True" in result.en and "副本" in result.zh
    assert "resnet18" in text(result.tried)


def test_lab04_3_rejects_probes_in_the_input_graph():
    result = expect_wrong("lab04.3", _make_probes(copy_first=False))
    assert "deep copy" in result.en and "深拷贝" in result.zh


def test_lab04_3_rejects_a_probe_that_reads_itself():
    result = expect_wrong("lab04.3", _make_probes(keep_probe=False))
    assert "reads its own output" in result.en and "它自己的输出" in result.zh


def test_lab04_3_rejects_records_kept_from_the_first_call():
    result = expect_wrong("lab04.3", _make_probes(every_call=False))
    assert "first call" in result.en and "第一次调用" in result.zh and "call 2" in text(result.tried)


def test_lab04_3_rejects_forward_hooks_on_modules_only():
    def hooks(gm, names):
        probed, records = copy.deepcopy(gm), {}
        nodes = {n.name: n for n in probed.graph.nodes}
        for name in names:
            node = nodes[name]
            if node.op == "call_module":
                probed.get_submodule(node.target).register_forward_hook(
                    lambda m, args, out, name=name: records.__setitem__(name, out.detach().clone()))
        return probed, records
    result = expect_wrong("lab04.3", hooks)
    assert "no probe after 'x'" in result.en and "a hook" in result.en
    assert "之后没有探针" in result.zh


def test_lab04_2_a_replacement_that_is_not_silu_is_named():
    def to_sigmoid(gm):
        found = subgraph_rewriter.replace_pattern(gm, lambda x: x * torch.sigmoid(x), lambda x: torch.sigmoid(x))
        found += subgraph_rewriter.replace_pattern(gm, lambda x: torch.sigmoid(x) * x, lambda x: torch.sigmoid(x))
        return len(found)

    result = expect_wrong("lab04.2", to_sigmoid)
    assert "calls torch.nn.functional.silu nowhere" in result.en and "没有任何 torch.nn.functional.silu" in result.zh


def test_lab04_2_rewriting_a_copy_is_named():
    reference = solution("lab04", "silu_rewrite")
    result = expect_wrong("lab04.2", lambda gm: reference(copy.deepcopy(gm)))
    assert "gm itself still holds" in result.en and "gm 本身仍保留" in result.zh


def test_lab04_2_a_method_sigmoid_pattern_is_explained():
    def method_pattern(gm):
        found = subgraph_rewriter.replace_pattern(gm, lambda x: x * x.sigmoid(), lambda x: F.silu(x))
        found += subgraph_rewriter.replace_pattern(gm, lambda x: x.sigmoid() * x, lambda x: F.silu(x))
        return len(found)

    result = expect_wrong("lab04.2", method_pattern)
    assert "a tensor method" in result.en and "张量方法" in result.zh


# ------------------------------------------------------------------ one language at a time
ONE_WRONG_ANSWER = {
    "lab04.1": _make_fuse(check_users=False),
    "lab04.2": silu_rewrite_one_order,
    "lab04.3": _make_probes(every_call=False),
}


def test_every_lab04_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab04.")]


@pytest.mark.parametrize("task_id", sorted(ONE_WRONG_ANSWER))
def test_lab04_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, ONE_WRONG_ANSWER[task_id], monkeypatch)


# ------------------------------------------------------------------ issue 30: classes the probes missed


def _fuse_where(*, producer=(nn.Conv2d,), lookup="path", fold=_fold, input_eval=False):
    """The solution's pass with one thing changed: which producers it folds into, how it looks modules up,
    how it folds, whether it switches the caller's module to eval mode first."""
    def key(target):
        return target if lookup == "path" else target.rsplit(".", 1)[-1]

    def fuse_conv_bn(gm):
        if input_eval:
            gm.eval()
        gm = copy.deepcopy(gm)
        modules = {}
        for name, m in gm.named_modules():
            if lookup == "first":
                modules.setdefault(key(name), m)
            else:
                modules[key(name)] = m
        for bn_node in list(gm.graph.nodes):
            if bn_node.op != "call_module" or not isinstance(modules[key(bn_node.target)], nn.BatchNorm2d):
                continue
            conv_node = bn_node.args[0]
            if not (isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and (producer is None or isinstance(modules[key(conv_node.target)], producer))):
                continue
            bn = modules[key(bn_node.target)]
            if len(conv_node.users) != 1 or bn.training:
                continue
            gm.set_submodule(conv_node.target, fold(modules[key(conv_node.target)], bn))
            bn_node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(bn_node)
        gm.graph.lint()
        gm.recompile()
        return gm
    return fuse_conv_bn


@pytest.mark.parametrize("producer", [None, (nn.Conv2d, nn.ConvTranspose2d), (nn.modules.conv._ConvNd,)],
                         ids=["no type test", "Conv2d or ConvTranspose2d", "any _ConvNd"])
def test_lab04_1_folding_into_a_conv_transpose_is_named(producer):
    # no probe had a ConvTranspose2d before a BN: these passed, and fold the BN into the wrong weight axis
    result = expect_wrong("lab04.1", _fuse_where(producer=producer))
    assert "ConvTranspose2d" in result.en and "only when the producer is an nn.Conv2d" in result.en
    assert "转置卷积" in result.zh and "生产者是 nn.Conv2d" in result.zh
    assert "ConvTranspose2d" in text(result.tried)


def test_lab04_1_torchs_helper_on_a_conv_transpose_is_named():
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    result = expect_wrong("lab04.1", _fuse_where(producer=None, fold=fuse_conv_bn_eval))
    assert "ConvTranspose2d" in result.en and "转置卷积" in result.zh


@pytest.mark.parametrize("lookup", ["last", "first"])
def test_lab04_1_modules_looked_up_by_the_last_part_of_their_path_are_named(lookup):
    # a top-level conv/bn next to a nested block.conv/block.bn of another type
    result = expect_wrong("lab04.1", _fuse_where(lookup=lookup))
    assert "last part of its path" in result.en and "'block.conv'" in result.en
    assert "最后一段" in result.zh and "完整的带点 target" in result.zh


def test_lab04_1_switching_the_callers_module_to_eval_is_named():
    result = expect_wrong("lab04.1", _fuse_where(input_eval=True))
    assert "switched the train/eval mode of the GraphModule it was given" in result.en
    assert "调用者的模型" in result.zh


def test_lab04_1_a_fused_conv_built_afresh_without_dilation_is_named():
    def fresh(conv, bn):
        ref = _fold(conv, bn)
        new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                        groups=conv.groups).to(conv.weight.dtype).train(conv.training)
        with torch.no_grad():
            new.weight.copy_(ref.weight)
            new.bias.copy_(ref.bias)
        return new
    result = expect_wrong("lab04.1", _fuse_where(fold=fresh))
    assert "built afresh" in result.en and "dilation" in result.got and "重新创建" in result.zh


def test_lab04_1_a_fused_conv_built_afresh_in_float32_is_named():
    def fresh(conv, bn):
        ref = _fold(conv, bn)
        new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                        conv.dilation, conv.groups).train(conv.training)
        with torch.no_grad():
            new.weight.copy_(ref.weight)
            new.bias.copy_(ref.bias)
        return new
    result = expect_wrong("lab04.1", _fuse_where(fold=fresh))
    assert "built afresh" in result.en and "float64" in result.got and "float64" in text(result.tried)


def test_lab04_1_a_graph_module_over_a_copied_graph_with_its_own_fused_convs_passes():
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    def fuse_conv_bn(gm):
        graph = copy.deepcopy(gm.graph)
        new = fx.GraphModule(gm, graph)  # shares gm's modules until a fused conv replaces one
        for bn_node in list(graph.nodes):
            if bn_node.op != "call_module" or type(new.get_submodule(bn_node.target)) is not nn.BatchNorm2d:
                continue
            src = bn_node.all_input_nodes[0]
            bn = new.get_submodule(bn_node.target)
            if (isinstance(src, fx.Node) and src.op == "call_module" and type(new.get_submodule(src.target)) is nn.Conv2d
                    and len(src.users) == 1 and not bn.training and bn.track_running_stats
                    and [n.target for n in graph.nodes].count(src.target) == 1):
                conv = new.get_submodule(src.target)  # fuse_conv_bn_eval wants eval mode: fold an eval copy
                new.set_submodule(src.target, fuse_conv_bn_eval(copy.deepcopy(conv).eval(), bn).train(conv.training))
                bn_node.replace_all_uses_with(src)
                graph.erase_node(bn_node)
        new.recompile()
        return new
    expect_passed("lab04.1", fuse_conv_bn)


def test_lab04_3_switching_the_callers_module_to_eval_is_named():
    def insert_probes(gm, names):
        gm.eval()
        return solution("lab04", "insert_probes")(gm, names)
    result = expect_wrong("lab04.3", insert_probes)
    assert "switched the train/eval mode" in result.en and "training mode" in text(result.tried)
    assert "调用者的模型" in result.zh


def test_lab04_3_skipping_placeholders_is_named():
    def insert_probes(gm, names):
        placeholders = {n.name for n in gm.graph.nodes if n.op == "placeholder"}
        probed, records = solution("lab04", "insert_probes")(gm, [n for n in names if n not in placeholders])
        return probed, records
    result = expect_wrong("lab04.3", insert_probes)
    assert "a placeholder" in result.en and "placeholders included" in result.en
    assert "placeholder 也不例外" in result.zh


def test_lab04_3_records_filled_by_an_interpreter_instead_of_probes_are_named():
    def insert_probes(gm, names):
        probed, records = copy.deepcopy(gm), {}

        class Watch(fx.Interpreter):
            def run_node(self, n):
                value = super().run_node(n)
                if n.name in names:
                    records[n.name] = value.detach().clone()
                return value
        probed.forward = lambda *args: Watch(probed).run(*args)
        return probed, records
    result = expect_wrong("lab04.3", insert_probes)
    assert "no probe after" in result.en and "Interpreter" in result.en and "之后没有探针" in result.zh


@pytest.mark.parametrize("lint", [True, False])
def test_lab04_3_a_probe_created_before_the_node_it_watches_is_named(lint):
    # with lint() this was told "a probe node reads its own output"; without it, "fails when called"
    def insert_probes(gm, names):
        class Probe(nn.Module):
            def __init__(self, records, name):
                super().__init__()
                self.records, self.name = records, name

            def forward(self, x):
                self.records[self.name] = x.detach().clone()
                return x

        probed, records = copy.deepcopy(gm), {}
        nodes = {n.name: n for n in probed.graph.nodes}
        for name in names:
            probed.add_submodule(f"probe_{name}", Probe(records, name))
            with probed.graph.inserting_before(nodes[name]):
                probe = probed.graph.call_module(f"probe_{name}", (nodes[name],))
            nodes[name].replace_all_uses_with(probe, delete_user_cb=lambda user, probe=probe: user is not probe)
        if lint:
            probed.graph.lint()
        probed.recompile()
        return probed, records
    result = expect_wrong("lab04.3", insert_probes)
    assert "comes before it in the graph" in result.en and "reads its own output" not in result.en
    assert "排在它前面" in result.zh


# ------------------------------------------------------------------ second attack: modules called twice, padding_mode,
# SiLU replacements that are not F.silu, a two-input pattern, probes nobody reads


def test_lab04_1_folding_into_a_conv_module_called_twice_is_named():
    # bn(conv(x)) + relu(conv(x)): the first reference folded into the shared conv (the second call changed by 0.63)
    result = expect_wrong("lab04.1", _make_fuse(shared=None))
    assert "called at 2 places" in result.en and "fold only when the conv module and the BN module" in result.en
    assert "在 2 处被调用" in result.zh and "共享" in result.zh
    assert "conv module called at two places" in text(result.tried)


@pytest.mark.parametrize("lint", [True, False])
def test_lab04_1_deleting_a_bn_module_called_twice_is_named(lint):
    # bn(conv(x)) + bn(relu(x)): the first reference folded the first call and deleted bn, which bn_1 still calls
    result = expect_wrong("lab04.1", _make_fuse(shared="conv", delete_bn=True, lint=lint))
    assert "'bn_1' still calls 'bn'" in result.en and "shared" in result.en
    assert "仍在调用 'bn'" in result.zh and "共享" in result.zh
    assert "BN module called at two places" in text(result.tried)


def test_lab04_1_right_answers_for_modules_called_twice_pass():
    # folding one call of a shared BN and keeping the module is right; so is a new fused module per call site
    expect_passed("lab04.1", _make_fuse(shared="conv"))

    def own_module_per_site(gm):
        gm = copy.deepcopy(gm)
        modules = dict(gm.named_modules())
        for bn_node in list(gm.graph.nodes):
            if bn_node.op != "call_module" or type(modules[bn_node.target]) is not nn.BatchNorm2d:
                continue
            conv_node = bn_node.args[0] if bn_node.args else bn_node.kwargs["input"]
            if not (isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and type(modules[conv_node.target]) is nn.Conv2d and len(conv_node.users) == 1
                    and not modules[bn_node.target].training and modules[bn_node.target].running_var is not None):
                continue
            name = f"fused_{conv_node.name}"
            gm.add_submodule(name, _fold(modules[conv_node.target], modules[bn_node.target]))
            conv_node.target = name
            bn_node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(bn_node)
        gm.delete_all_unused_submodules()
        gm.recompile()
        return gm
    expect_passed("lab04.1", own_module_per_site)


def test_lab04_1_a_fused_conv_built_afresh_without_padding_mode_is_named():
    def fresh(conv, bn):  # every setting passed on but padding_mode, the dtype and the mode kept
        ref = _fold(conv, bn)
        new = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                        conv.dilation, conv.groups, True, dtype=conv.weight.dtype).train(conv.training)
        new.weight, new.bias = ref.weight, ref.bias
        return new
    result = expect_wrong("lab04.1", _make_fuse(fold=fresh))
    assert "built afresh" in result.en and "padding_mode" in result.en and "padding_mode" in text(result.got)
    assert "'reflect'" in text(result.got) and "重新创建" in result.zh and "padding_mode" in result.zh


def test_lab04_2_replacements_that_swap_the_spellings_are_named():
    # each spelling replaced by the other: gm was edited in place, but F.silu appears nowhere
    def swap(gm):
        return sum(len(subgraph_rewriter.replace_pattern(gm, p, r)) for p, r in ((_plain, _swapped), (_swapped, _plain)))
    result = expect_wrong("lab04.2", swap)
    assert "gm was rewritten" in result.en and "F.silu" in result.en and "in place, not a copy" not in result.en
    assert "gm 也确实被改写了" in result.zh


def test_lab04_2_a_pattern_with_two_inputs_is_named():
    # a * sigmoid(b) -> silu(a) rewrites products of two different values (x*sigmoid(y) became silu(x))
    def two_inputs(gm):
        found = subgraph_rewriter.replace_pattern(gm, lambda a, b: a * torch.sigmoid(b), lambda a, b: F.silu(a))
        return len(found) + len(subgraph_rewriter.replace_pattern(gm, _swapped, _silu))
    result = expect_wrong("lab04.2", two_inputs)
    assert "two different values" in result.en and "two separate inputs" in result.en
    assert "不是 SiLU" in result.zh and "两个独立输入" in result.zh
    assert "operand order" not in result.en


@pytest.mark.parametrize("rewire", ["none", "first"])
def test_lab04_3_a_probe_whose_output_nobody_reads_is_named(rewire):
    def insert_probes(gm, names):
        class Probe(nn.Module):
            def __init__(self, records, name):
                super().__init__()
                self.records, self.name = records, name

            def forward(self, x):
                self.records[self.name] = x.detach().clone()
                return x

        probed, records = copy.deepcopy(gm), {}
        nodes = {n.name: n for n in probed.graph.nodes}
        for name in names:
            node = nodes[name]
            users = list(node.users)
            probed.add_submodule(f"probe_{name}", Probe(records, name))
            with probed.graph.inserting_after(node):
                probe = probed.graph.call_module(f"probe_{name}", (node,))
            if rewire == "first" and users:
                users[0].replace_input_with(node, probe)
        probed.recompile()
        return probed, records
    result = expect_wrong("lab04.3", insert_probes)
    assert "still reads" in result.en and "dead end" in result.en
    assert "仍然直接读取" in result.zh and "死胡同" in result.zh


def test_lab04_3_users_moved_one_by_one_pass():
    def insert_probes(gm, names):
        probed, records = copy.deepcopy(gm), {}

        class Rec(nn.Module):
            def __init__(self, tag):
                super().__init__()
                self.tag = tag

            def forward(self, t):
                records[self.tag] = t.clone()
                return t
        for i, node in enumerate([n for n in probed.graph.nodes if n.name in set(names)]):
            probed.add_submodule(f"rec{i}", Rec(node.name))
            users = list(node.users)
            with probed.graph.inserting_after(node):
                probe = probed.graph.call_module(f"rec{i}", (node,))
            for user in users:
                user.replace_input_with(node, probe)
        probed.graph.lint()
        probed.recompile()
        return probed, records
    expect_passed("lab04.3", insert_probes)


# ------------------------------------------------------------------ lab04.1: BNs without weights or statistics,
# a BN's input by keyword, convs in training mode before eval-mode BNs (third attack pass)


def test_lab04_1_names_a_bn_without_affine_weights():
    result = expect_wrong("lab04.1", _make_fuse(fold=lambda c, b: _fold(c, b, affine_defaults=False)))
    assert "affine=False" in text(result.tried) and "TypeError" in text(result.got)
    assert "γ = 1" in result.en and "bn.weight and bn.bias are None" in result.en
    assert "γ = 1" in result.zh and "照样要折叠" in result.zh


def test_lab04_1_names_a_bn_input_passed_by_keyword():
    crash = expect_wrong("lab04.1", _make_fuse(keyword="crash"))
    assert "input=" in text(crash.tried) and "IndexError" in text(crash.got)
    assert "kwargs" in crash.en and "按关键字传入" in crash.zh
    skip = expect_wrong("lab04.1", _make_fuse(keyword="skip"))
    assert "can be folded" in skip.en and "kwargs" in skip.en and "可以折叠" in skip.zh and "kwargs" in skip.zh


def test_lab04_1_names_folding_a_bn_without_running_statistics():
    result = expect_wrong("lab04.1", _make_fuse(check_stats=False))
    assert "track_running_stats=False" in text(result.tried)
    assert "no running statistics" in result.en and "没有 running 统计量" in result.zh

    def fold_with_batch_free_stats(conv, bn):  # pretends the missing statistics are 0 and 1
        bn = copy.deepcopy(bn)
        if bn.running_var is None:
            bn.running_mean, bn.running_var = torch.zeros(bn.num_features), torch.ones(bn.num_features)
        return _fold(conv, bn)
    folded = expect_wrong("lab04.1", _make_fuse(check_stats=False, fold=fold_with_batch_free_stats))
    assert "was folded" in folded.en and "track_running_stats=False" in folded.en and "保持不融合" in folded.zh


def test_lab04_1_names_switching_a_fused_conv_to_eval_mode():
    result = expect_wrong("lab04.1", _make_fuse(eval_fused=True))
    assert "stem[1] and bn, switched to eval" in text(result.tried)
    assert "switched the train/eval mode of 'conv'" in result.en and "'conv' 的 train/eval 模式" in result.zh


def test_lab04_1_names_skipping_or_asserting_on_a_conv_in_training_mode():
    from torch.nn.utils.fusion import fuse_conv_bn_eval
    asserting = expect_wrong("lab04.1", _make_fuse(fold=fuse_conv_bn_eval))
    assert "AssertionError" in text(asserting.got) and "still folded" in asserting.en and "照样要折叠" in asserting.zh

    def fold_only_eval_convs(gm):
        gm = copy.deepcopy(gm)
        modules = dict(gm.named_modules())
        for bn_node in list(gm.graph.nodes):
            conv_node = bn_node.args[0] if bn_node.args else bn_node.kwargs.get("input")
            if not (bn_node.op == "call_module" and isinstance(modules[bn_node.target], nn.BatchNorm2d)
                    and isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and isinstance(modules[conv_node.target], nn.Conv2d) and len(conv_node.users) == 1
                    and not modules[bn_node.target].training and not modules[conv_node.target].training
                    and modules[bn_node.target].running_var is not None
                    and sum(n.target == conv_node.target for n in gm.graph.nodes if n.op == "call_module") == 1
                    and sum(n.target == bn_node.target for n in gm.graph.nodes if n.op == "call_module") == 1):
                continue
            gm.set_submodule(conv_node.target, _fold(modules[conv_node.target], modules[bn_node.target]))
            bn_node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(bn_node)
        gm.recompile()
        return gm
    skipped = expect_wrong("lab04.1", fold_only_eval_convs)
    assert "stem[1] and bn, switched to eval" in text(skipped.tried)
    assert "can be folded" in skipped.en and "still folded" in skipped.en and "照样要折叠" in skipped.zh


def test_lab04_1_the_reference_folds_bns_without_affine_weights_and_keyword_inputs():
    fuse = solution("lab04", "fuse_conv_bn")
    for bn_options, keyword in (({"affine": False}, False), ({}, True)):
        class Pair(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, **bn_options)

            def forward(self, x):
                return self.bn(input=self.conv(x)) if keyword else self.bn(self.conv(x))
        model = Pair().eval()
        with torch.no_grad():
            model.bn.running_var.uniform_(0.5, 2.0, generator=torch.Generator().manual_seed(0))
        fused = fuse(fx.symbolic_trace(model))
        x = torch.randn(2, 3, 6, 6, generator=torch.Generator().manual_seed(1))
        assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
        torch.testing.assert_close(fused(x), model(x), rtol=1e-4, atol=1e-5)


def test_lab04_3_a_record_converted_to_float32_is_named():
    result = expect_wrong("lab04.3", _make_probes(as_float=True))
    assert "float64" in text(result.tried)
    assert "dtype torch.float32" in result.en and "torch.float64" in result.en and "dtype" in result.zh


def test_lab04_3_a_probe_named_after_an_existing_submodule_is_named():
    result = expect_wrong("lab04.3", _make_probes(prefix=""))
    assert "'head'" in result.en and "already uses" in result.en and "已经在用的名字" in result.zh


def test_lab04_2_an_in_place_silu_replacement_is_named():
    def in_place(gm):
        return sum(len(subgraph_rewriter.replace_pattern(gm, p, lambda x: F.silu(x, inplace=True)))
                   for p in (_plain, _swapped))
    result = expect_wrong("lab04.2", in_place)
    assert "inplace=True" in result.en and "overwrites its input" in result.en and "覆盖输入" in result.zh


def test_lab04_2_a_torch_mul_pattern_next_to_a_star_pattern_is_named_as_torch_mul():
    def mul_and_star(gm):
        patterns = (lambda x: torch.mul(x, torch.sigmoid(x)), _swapped)
        return sum(len(subgraph_rewriter.replace_pattern(gm, p, _silu)) for p in patterns)
    result = expect_wrong("lab04.2", mul_and_star)
    assert "torch.mul" in result.en and "operator.mul" in result.en and "operand order" not in result.en
    assert "torch.mul" in result.zh and "operator.mul" in result.zh
