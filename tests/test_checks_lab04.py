"""Checkers of lab04 (FX passes): reference answers pass, stubs are not implemented, and the
usual mistakes get their specific hint."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx import subgraph_rewriter

from fxcourse import check


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# ------------------------------------------------------------------ lab04.1 answers


def _fold(conv, bn, use_conv_bias=True):
    fused = copy.deepcopy(conv)
    with torch.no_grad():
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        bias = conv.bias if (conv.bias is not None and use_conv_bias) else torch.zeros_like(bn.running_mean)
        fused.weight = nn.Parameter(conv.weight * scale.reshape(-1, 1, 1, 1))
        fused.bias = nn.Parameter((bias - bn.running_mean) * scale + bn.bias)
    return fused


def _make_fuse(*, copy_first=True, check_users=True, use_conv_bias=True, dotted_setattr=False,
               recompile=True):
    def fuse_conv_bn(gm):
        if copy_first:
            gm = copy.deepcopy(gm)
        modules = dict(gm.named_modules())
        for bn_node in list(gm.graph.nodes):
            if bn_node.op != "call_module" or not isinstance(modules[bn_node.target], nn.BatchNorm2d):
                continue
            conv_node = bn_node.args[0]
            if not (isinstance(conv_node, fx.Node) and conv_node.op == "call_module"
                    and isinstance(modules[conv_node.target], nn.Conv2d)):
                continue
            if check_users and len(conv_node.users) != 1:
                continue
            fused = _fold(modules[conv_node.target], modules[bn_node.target], use_conv_bias)
            if dotted_setattr:
                setattr(gm, conv_node.target, fused)
            else:
                gm.set_submodule(conv_node.target, fused)
            bn_node.replace_all_uses_with(conv_node)
            gm.graph.erase_node(bn_node)
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


def _make_probes(*, clone=True, copy_first=True):
    def insert_probes(gm, names):
        class Probe(nn.Module):
            def __init__(self, records, name):
                super().__init__()
                self.records, self.name = records, name

            def forward(self, x):
                self.records[self.name] = x.detach().clone() if clone else x
                return x

        probed = copy.deepcopy(gm) if copy_first else gm
        records = {}
        nodes = {n.name: n for n in probed.graph.nodes}
        for name in names:
            node = nodes[name]
            probed.add_submodule(f"probe_{name}", Probe(records, name))
            with probed.graph.inserting_after(node):
                probe = probed.graph.call_module(f"probe_{name}", (node,))
            node.replace_all_uses_with(probe, delete_user_cb=lambda user, probe=probe: user is not probe)
        probed.graph.lint()
        probed.recompile()
        return probed, records
    return insert_probes


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("task_id, answer", [
    ("lab04.1", _make_fuse()),
    ("lab04.2", silu_rewrite),
    ("lab04.3", _make_probes()),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id", ["lab04.1", "lab04.2", "lab04.3"])
def test_stub_is_not_implemented(task_id):
    assert check(task_id, _stub).status == "not_implemented"


def test_fusing_a_shared_conv_is_named_as_the_classic_bug():
    result = check("lab04.1", _make_fuse(check_users=False))
    assert result.status == "wrong", result.to_text()
    assert "SharedConv" in result.tried
    assert "another user" in result.en and "len(conv_node.users) == 1" in result.en
    assert "其他使用者" in result.zh
    assert result.got.startswith("bn removed, max abs difference")


def test_editing_the_input_in_place_is_wrong():
    result = check("lab04.1", _make_fuse(copy_first=False))
    assert result.status == "wrong" and "copy.deepcopy(gm)" in result.en and "副本" in result.zh


def test_forgetting_the_conv_bias_is_caught_on_the_bias_model():
    result = check("lab04.1", _make_fuse(use_conv_bias=False))
    assert result.status == "wrong", result.to_text()
    assert "bias=True" in result.tried and "own bias" in result.en


def test_setattr_with_a_dotted_target_is_explained():
    result = check("lab04.1", _make_fuse(dotted_setattr=True))
    assert result.status == "wrong" and "set_submodule" in result.en and "'stem.0'" in result.en


def test_forgetting_recompile_is_explained():
    result = check("lab04.1", _make_fuse(recompile=False))
    assert result.status == "wrong" and "recompile()" in result.en


def test_one_operand_order_only_is_named():
    result = check("lab04.2", silu_rewrite_one_order)
    assert result.status == "wrong", result.to_text()
    assert "sigmoid(x) * x" in result.en and "second time" in result.en


def test_returning_the_matches_instead_of_a_count():
    result = check("lab04.2", silu_rewrite_returns_matches)
    assert result.status == "wrong" and "number of replacements" in result.en


def test_probe_without_a_copy_is_overwritten_by_inplace_relu():
    result = check("lab04.3", _make_probes(clone=False))
    assert result.status == "wrong", result.to_text()
    assert "inplace=True" in result.en and "clone()" in result.en
    assert "resnet18" in result.tried


def test_a_pattern_written_with_torch_mul_matches_nothing():
    def with_torch_mul(gm):
        return len(subgraph_rewriter.replace_pattern(gm, lambda x: torch.mul(x, torch.sigmoid(x)), _silu))
    result = check("lab04.2", with_torch_mul)
    assert result.status == "wrong" and "operator.mul" in result.en


def test_probes_in_the_input_graph_are_wrong():
    result = check("lab04.3", _make_probes(copy_first=False))
    assert result.status == "wrong" and "copy.deepcopy(gm)" in result.en
