"""Claims of lecture 04 about torch.fx.experimental.optimization.fuse, run on the installed torch.

Lecture 04 §6 says fuse leaves a conv whose output has two readers alone, but folds BN into a
conv *module* called at two places (two nodes, one user each), changing the other call; the
lecture's own pass counts the nodes calling each module. If a release changes fuse's test,
these fail and the lecture's prose has to change with them.
"""
import torch
from torch import fx, nn
from torch.fx.experimental.optimization import fuse


def _trained_bn(bn: nn.BatchNorm2d) -> nn.BatchNorm2d:
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    return bn


class OutputTwice(nn.Module):  # one conv call, its output read twice
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3, padding=1), _trained_bn(nn.BatchNorm2d(4))

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


class ModuleTwice(nn.Module):  # one conv module, called at two places
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 3, 3, padding=1), _trained_bn(nn.BatchNorm2d(3))

    def forward(self, x):
        return self.bn(self.conv(x)) + self.conv(x).relu()


def _calls(gm: fx.GraphModule, target: str) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_module" and n.target == target)


def test_fuse_leaves_a_conv_whose_output_has_two_readers_alone():
    torch.manual_seed(0)
    model, x = OutputTwice().eval(), torch.randn(2, 3, 8, 8)
    fused = fuse(model)
    assert _calls(fused, "bn") == 1  # BN still there
    torch.testing.assert_close(fused(x), model(x))


def test_fuse_folds_bn_into_a_conv_module_called_at_two_places_and_changes_the_other_call():
    torch.manual_seed(0)
    model, x = ModuleTwice().eval(), torch.randn(2, 3, 8, 8)
    assert _calls(fx.symbolic_trace(model), "conv") == 2
    fused = fuse(model)
    assert _calls(fused, "bn") == 0  # folded although the module is shared
    with torch.no_grad():
        assert (fused(x) - model(x)).abs().max() > 0.1
