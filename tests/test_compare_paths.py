"""compare_capture's compiled paths (Inductor, AOTInductor, IREE) and its fair latency
columns, on small models no notebook uses; the balanced orders of _latency.fair_latency."""
from __future__ import annotations

import itertools

import pytest
import torch

from fxcourse import FxCourseError
from fxcourse.viewers._latency import balanced_orders, fair_latency
from fxcourse.viewers.compare import COMPILED, METHODS, PATHS, compare_capture


class Swish(torch.nn.Module):
    """Linear then x * sigmoid(x): every path can take it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(5, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return y * torch.sigmoid(y)


def by_sign(x: torch.Tensor) -> torch.Tensor:
    """A branch on a tensor's value: Dynamo breaks, export and tracing cannot keep it."""
    if x.mean() > 0:
        return x.cos()
    return x.sin() * 2


def test_every_path_runs_a_plain_model_and_is_timed_against_eager():
    torch.manual_seed(3)
    model = Swish().eval()
    x = torch.randn(4, 5)
    grad_mode, threads = torch.is_grad_enabled(), torch.get_num_threads()
    table = compare_capture(model, x, paths="all", latency=True, rounds=2)
    assert [r.method for r in table.rows] == list(PATHS)
    for row in table.rows:
        assert row.worked and row.matches, (row.method, row.reason)
        assert row.latency is not None and row.latency.median > 0 and row.latency.rounds == 2
        assert table.speedup(row.method) == pytest.approx(table.eager.median / row.latency.median)
    assert table["export + IREE"].ops > table["torch.export.export"].ops  # MLIR ops, not ATen calls
    assert "MLIR operations of the linalg-on-tensors module" in table.to_text()
    assert table["torch.compile inductor"].graphs == 1
    text = table.to_text(timings=True, width=200)
    assert "speed-up" in text and "each in another order" in text and f"eager: {table.eager.ms()} ms" in text
    assert "speed-up" not in table.to_text()  # timings are shown only when asked
    assert (torch.is_grad_enabled(), torch.get_num_threads()) == (grad_mode, threads)
    assert model.training is False and torch.allclose(model(x), Swish.forward(model, x))


def test_a_data_dependent_branch_fails_ahead_of_time_paths_and_only_right_rows_are_timed():
    x = torch.tensor([0.5, 1.0, 2.0])  # mean > 0; the second input (sign-flipped) takes the other branch
    table = compare_capture(by_sign, x, paths=["torch.jit.trace", *COMPILED], latency=True, rounds=2)
    trace, inductor, aoti, iree = table.rows
    assert trace.worked and trace.matches is False and trace.latency is None  # a wrong path is not timed
    assert inductor.worked and inductor.matches and (inductor.graphs, inductor.breaks) == (2, 1)
    assert inductor.latency is not None
    for row in (aoti, iree):
        assert not row.worked and row.latency is None and table.speedup(row.method) is None
        assert "data-dependent" in row.reason
        assert "torch.cond" in row.note
    assert table.eager is not None


def test_the_default_rows_are_still_the_six_capture_systems():
    table = compare_capture(lambda x: x * 2, torch.ones(2), paths=None)
    assert [r.method for r in table.rows] == list(METHODS)
    assert table.eager is None and all(r.latency is None for r in table.rows)
    with pytest.raises(FxCourseError, match="export \\+ IREE"):
        compare_capture(lambda x: x * 2, torch.ones(2), paths=["export+IREE"])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 9, 10])
def test_every_runner_follows_every_other_equally_often_within_a_round(n):
    orders = balanced_orders(n)
    assert all(sorted(order) == list(range(n)) for order in orders)
    pairs = [(a, b) for order in orders for a, b in zip(order, order[1:])]
    assert len(set(pairs)) == n * (n - 1)  # every ordered pair of two different runners occurs ...
    assert len(pairs) == (1 if n % 2 == 0 else 2) * n * (n - 1)  # ... equally often


def test_latency_times_runners_in_the_balanced_orders():
    calls: list[str] = []
    runners = {name: (lambda n=name: calls.append(n)) for name in "abc"}
    result = fair_latency(runners, min_run_time=1e-6)
    blocks = [name for name, _ in itertools.groupby(calls)]
    warm, timed = blocks[:3], blocks[3:]
    assert warm == ["a", "b", "c"]
    expected = ["abc"[k] for order in balanced_orders(3) for k in order]
    assert [b for b, _ in itertools.groupby(expected)] == timed  # 6 rounds, the design's orders
    assert result["a"].rounds == 6
