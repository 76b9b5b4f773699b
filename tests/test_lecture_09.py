"""Claims of lecture 09 (AOTAutograd and Inductor) about torch's behaviour, run on the installed torch.

Each test pins one statement the lecture makes (several were once made wrongly: Core ATen as a
closed set, min-cut "minimising saved bytes", sort "without a lowering", cpp_wrapper as "the
same wrapper" AOTInductor packages). If a torch release changes the behaviour, the test fails
and the lecture's prose has to change with it. The functions here are not the lecture's own,
so a pass is not a copy of a notebook output. The benchmark test checks the timing method
(rotated order), not any speed. A review (rev0910) added: why min-cut keeps exp's output (the
kinds of its users), the 512-element Triton sort limit as a default, output code and debug folders
switched on in a running process, freezing's MKL routine as build-dependent, the eager chain's six
passes, and a warm compile that really hits the cache its cold run filled. Issue 27's last topic
added: Inductor's pattern-matcher passes (a joint-graph replacement, the counter counting handler
runs rather than changes, a user's register_replacement in a custom post-grad pass and its cache
bypass) and the scheduler's fusion rules (what can_fuse refuses, the C++ backend's outer-loop
fusion, node counts before and after fusion read from the fusion log).
"""
import importlib.util
import inspect
import itertools
import logging
import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch._dynamo
import torch._functorch.config as functorch_config
from functorch.compile import make_boxed_func
from torch import nn
from torch._decomp import core_aten_decompositions
from torch._dynamo.utils import counters
from torch._functorch.aot_autograd import aot_module_simplified
from torch._functorch.partitioners import default_partition

from fxcourse import aot_graphs, inductor_code

from lecture_claims import fresh_dynamo  # noqa: F401 (fresh_dynamo is an autouse fixture)

ROOT = Path(__file__).resolve().parents[1]


def keep(gm, example_inputs):
    return make_boxed_func(gm.forward)


# --- section 1: no input requires grad -> one inference graph ---------------------------------

def test_no_input_requiring_grad_gives_one_inference_graph_and_no_partitioner():
    calls = Counter()

    def counting(name, fn):
        def counted(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return counted

    def backend(gm, example_inputs):
        return aot_module_simplified(
            gm, example_inputs, fw_compiler=counting("fw", keep),
            bw_compiler=counting("bw", keep), partition_fn=counting("partition", default_partition))

    def f(x, w):
        return torch.tanh(x @ w).sum(1)

    torch.compile(f, backend=backend)(torch.randn(3, 2), torch.randn(2, 4))
    assert calls == Counter(fw=1)  # inference_compiler defaults to fw_compiler
    calls.clear()
    torch._dynamo.reset()
    torch.compile(f, backend=backend)(torch.randn(3, 2, requires_grad=True), torch.randn(2, 4))
    assert calls == Counter(fw=1, partition=1)


# --- section 2: input mutations ---------------------------------------------------------------

def bump(x):
    x.add_(1)
    return x * 2


def test_aot_module_simplified_defaults_return_input_mutation_as_extra_output():
    graphs = []

    def grab(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    x = torch.zeros(3)
    out = torch.compile(bump, backend=lambda gm, ex: aot_module_simplified(gm, ex, fw_compiler=grab))(x)
    assert x.tolist() == [1.0, 1.0, 1.0] and out.tolist() == [2.0, 2.0, 2.0]
    (gm,) = graphs
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == ["aten.add.Tensor", "aten.mul.Tensor"]  # no in-place op, no copy_
    returned = [a.name for a in gm.graph.find_nodes(op="output")[0].args[0]]
    assert returned == ["add", "mul"]  # the new x first, then the result


def test_inductor_keeps_input_mutation_as_copy_into_the_input():
    code = inductor_code(bump, torch.zeros(3))
    targets = [str(n.target) for n in code.post_grad[0].nodes if n.op == "call_function"]
    assert "aten.copy_.default" in targets
    assert len(code.kernels) == 1 and "copy_" in code.kernels[0].name
    assert "arg0_1, buf0, arg0_1" in code.wrapper  # the input is also an output of the kernel


# --- section 3: Core ATen is not closed -------------------------------------------------------

def test_some_non_core_ops_survive_run_decompositions():
    class M(nn.Module):
        def forward(self, x, edges, a):
            return (torch.cumprod(x, 0), torch.searchsorted(edges, x),
                    torch.linalg.inv_ex(a).inverse, torch.erfinv(x / 2))

    ep = torch.export.export(M(), (torch.rand(4), torch.arange(8.0) / 8, torch.eye(3) + 0.1))
    ep = ep.run_decompositions()
    table = core_aten_decompositions()
    left = {n.target for n in ep.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload) and torch.Tag.core not in n.target.tags}
    assert {str(op) for op in left} == {"aten.cumprod.default", "aten.searchsorted.Tensor",
                                        "aten.linalg_inv_ex.default", "aten.erfinv.default"}
    assert not any(op in table for op in left)


# --- section 4: min-cut is a heuristic with knobs ---------------------------------------------

def chain(x):
    return torch.sin(x).cos().exp()


def test_min_cut_keeps_exp_output_because_of_ban_recompute_materialized_backward():
    x = torch.randn(64, requires_grad=True)
    g = aot_graphs(chain, x, partitioner="min_cut")
    assert len(g.saved) == 2 and "primals_1" in g.saved
    assert "aten.exp.default" not in g.ops(g.backward)
    for knobs in ({"ban_recompute_materialized_backward": False}, {"aggressive_recomputation": True}):
        with functorch_config.patch(knobs):
            g = aot_graphs(chain, x, partitioner="min_cut")
        assert g.saved == ["primals_1"], knobs
        backward = g.ops(g.backward)
        assert {"aten.sin.default", "aten.cos.default", "aten.exp.default"} <= set(backward), knobs


def test_min_cut_knobs_exist_with_the_defaults_the_lecture_names():
    config = functorch_config.get_config_copy()
    bans = {k: v for k, v in config.items() if k.startswith("ban_recompute")}
    assert len(bans) == 5 and all(bans.values())
    assert config["aggressive_recomputation"] is False
    assert config["activation_memory_budget"] == 1.0


# --- section 5: sort has a lowering; the C++ backend lacks SORT -------------------------------

def test_sort_has_a_lowering_but_cpp_backend_lacks_sort_feature_so_it_falls_back():
    from torch._inductor.codegen.common import BackendFeature
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.lowering import lowerings

    assert torch.ops.aten.sort.stable in lowerings and torch.ops.aten.sort.default in lowerings
    assert BackendFeature.SORT not in CppScheduling.backend_features
    assert BackendFeature.SORT in TritonScheduling.backend_features
    code = inductor_code(lambda x: torch.sort(x, dim=1).values * 2, torch.randn(4, 8))
    assert [(e.name, e.kind) for e in code.externs] == [("aten.sort.stable", "fallback")]


def test_torch_logs_output_code_and_torch_compile_debug_show_the_output(tmp_path):
    """On an FX-graph cache hit the log still has the code, but the debug folder is not written."""
    probe = "import torch; torch.compile(lambda x: torch.relu(x * 3 - 1))(torch.randn(8))"
    seen = {}
    for caches in ("fill", "hit", "off"):  # "fill" fills the cache (or hits it), "hit" hits it
        debug_dir = tmp_path / caches
        env = {**os.environ, "TORCH_LOGS": "output_code", "TORCH_COMPILE_DEBUG": "1",
               "TORCH_COMPILE_DEBUG_DIR": str(debug_dir)}
        if caches == "off":
            env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
        run = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        logged = [l.split("[__output_code] ", 1)[1] for l in run.stderr.splitlines()
                  if "[__output_code] " in l]
        assert any(l.strip().startswith("def call(") for l in logged)
        assert any("cpp_fused" in l for l in logged)
        seen[caches] = {Path(root).name: set(files) for root, _, files in os.walk(debug_dir)
                        if "output_code.py" in files}
    assert seen["hit"] == {}
    assert list(seen["off"]) == ["model__0_inference_0.0"]
    assert {"fx_graph_readable.py", "fx_graph_transformed.py", "ir_pre_fusion.txt",
            "ir_post_fusion.txt", "output_code.py"} <= seen["off"]["model__0_inference_0.0"]


# --- section 6: cpp_wrapper and AOTInductor: one generator, two entry points ------------------

def test_cpp_wrapper_and_aotinductor_share_the_generator_with_different_entry_points(tmp_path):
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu

    def f(x):
        return torch.relu(x * 2 + 1)

    jit = inductor_code(f, torch.randn(4, 8), options={"cpp_wrapper": True})
    assert "inductor_entry_impl(" in jit.wrapper and "run_impl(" not in jit.wrapper

    class M(nn.Module):
        def forward(self, x):
            return f(x)

    ep = torch.export.export(M(), (torch.randn(4, 8),))
    package = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "m.pt2"))
    with zipfile.ZipFile(package) as z:
        sources = [z.read(n).decode() for n in z.namelist() if n.endswith(".cpp")]
    wrapper = [s for s in sources if "run_impl(" in s]
    assert len(wrapper) == 1 and "AOTInductorModel::run_impl(" in wrapper[0]
    assert "inductor_entry_impl" not in wrapper[0]
    # one class, CppWrapperCpu, writes both
    assert "inductor_entry_impl(" in _source(CppWrapperCpu._write_jit_entry_point_signature)
    assert "::run_impl(" in _source(CppWrapperCpu._write_aoti_entry_point_signature)


def _source(fn):
    return inspect.getsource(fn)


# --- section 9: modes -------------------------------------------------------------------------

def test_reduce_overhead_is_cuda_graphs_and_is_skipped_on_cpu():
    from torch._inductor import list_mode_options

    assert list_mode_options("reduce-overhead") == {"triton.cudagraphs": True}
    assert list_mode_options("max-autotune") == {
        "max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True}
    assert list_mode_options("max-autotune-no-cudagraphs") == {
        "max_autotune": True, "coordinate_descent_tuning": True}
    f = torch.compile(lambda x: torch.relu(x) * 3, mode="reduce-overhead")
    x = torch.randn(8)
    torch.testing.assert_close(f(x), torch.relu(x) * 3)
    assert counters["inductor"]["cudagraph_skips"] == 1


# --- section 8: the benchmark times in rotated order ------------------------------------------

def _bandwidth_module():
    spec = importlib.util.spec_from_file_location("inductor_bandwidth", ROOT / "benchmarks/inductor_bandwidth.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bandwidth_benchmark_cycles_through_all_orders_so_each_path_follows_each_equally_often():
    bench = _bandwidth_module()
    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in ("eager", "compiled", "copy")}
    bench.best_seconds(fns, rounds=6, calls=1)
    per_round = [tuple(order[i:i + 3]) for i in range(0, 18, 3)]
    assert sorted(per_round) == sorted(itertools.permutations(["eager", "compiled", "copy"]))
    followers = Counter((r[i], r[i + 1]) for r in per_round for i in range(2))
    assert len(followers) == 6 and set(followers.values()) == {2}  # each pair twice
    order.clear()
    bench.best_seconds(fns, rounds=2, calls=1, permute=False)  # the old, unfair order
    assert order == ["eager", "compiled", "copy"] * 2


# --- review rev0910: corrected claims and newly taught behaviour ------------------------------

def test_min_cut_bans_recomputing_exp_for_its_detach_and_output_users_not_for_the_backward_mul():
    """exp counts as "materialised in the backward" because of the kinds of its users
    (a detach alias, the joint graph's output node), not because the backward needs it in memory."""
    from torch._functorch import partitioners

    x = torch.randn(64, requires_grad=True)
    joint = aot_graphs(chain, x, partitioner="min_cut").joint
    exp = next(n for n in joint.graph.nodes if n.target == torch.ops.aten.exp.default)
    assert [str(u.target) for u in exp.users] == ["aten.detach.default", "output"]
    op_types = partitioners.get_default_op_list()
    assert torch.ops.aten.detach not in op_types.fusible_ops
    assert torch.ops.aten.detach not in op_types.view_ops
    # the backward's real use of exp is a fusible mul (after a second detach)
    detach_2 = next(iter(next(iter(exp.users)).users))
    assert detach_2.target == torch.ops.aten.detach.default
    assert [u.target.overloadpacket for u in detach_2.users] == [torch.ops.aten.mul]
    assert torch.ops.aten.mul in op_types.fusible_ops

    reasons = []

    class Keep(logging.Handler):
        def emit(self, record):
            reasons.append(record.getMessage())

    original = partitioners.get_default_op_list

    def detach_fusible_and_a_view():
        ops = original()
        ops.fusible_ops.add(torch.ops.aten.detach)
        ops.view_ops.add(torch.ops.aten.detach)
        return ops

    log = logging.getLogger("torch._functorch.partitioners")
    handler, level = Keep(), log.level
    logging.disable(logging.NOTSET)
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    partitioners.get_default_op_list = detach_fusible_and_a_view
    try:
        g = aot_graphs(chain, x, partitioner="min_cut")
    finally:
        partitioners.get_default_op_list = original
        log.removeHandler(handler)
        log.setLevel(level)
    # the output node alone still makes the heuristic ban recomputing exp
    assert "materialized backwards: exp (detach, output)" in reasons
    assert "exp" in g.saved and "aten.exp.default" not in g.ops(g.backward)


def test_triton_sort_limit_of_512_is_a_default_that_decompose_sort_ops_lifts():
    import inspect

    import torch._inductor.config as inductor_config
    from torch._inductor import ir

    source = inspect.getsource(ir.Sort.create)
    assert "max_rblock = 512" in source
    limited = source.index("max_rblock = 512")
    switch = source.index("if config.triton.decompose_sort_ops:")
    assert switch < limited  # the 512 limit sits in the else branch of the switch
    assert "is_persistent_kernel = config.triton.persistent_reductions" in source[switch:limited]
    expected = os.environ.get("TORCHINDUCTOR_DECOMPOSE_SORT_OPS", "0") == "1"
    assert inductor_config.triton.decompose_sort_ops is expected
    config_source = inspect.getsource(inductor_config)
    assert 'os.environ.get("TORCHINDUCTOR_DECOMPOSE_SORT_OPS", "0") == "1"' in config_source


@pytest.mark.filterwarnings("ignore:dynamo_pgo force disabled")
def test_set_logs_and_trace_enabled_show_the_output_in_a_running_process(tmp_path, capfd):
    import torch._inductor.config as inductor_config

    assert "TORCH_LOGS" not in os.environ and not inductor_config.trace.enabled
    logging.disable(logging.NOTSET)
    torch._logging.set_logs(output_code=True)
    try:
        with inductor_config.patch({"trace.enabled": True, "force_disable_caches": True}), \
                torch._dynamo.config.patch(debug_dir_root=str(tmp_path)):
            torch.compile(lambda x: torch.relu(x * 5 - 2))(torch.randn(8))
    finally:
        torch._logging.set_logs()
    logged = capfd.readouterr().err
    assert "[__output_code]" in logged and "def call(" in logged and "cpp_fused" in logged
    folders = {Path(root).name: set(files) for root, _, files in os.walk(tmp_path)
               if "output_code.py" in files}
    # one folder; its numbers count the process's earlier compiles (0 and 0 in a fresh one)
    assert len(folders) == 1 and re.fullmatch(r"model__\d+_inference_\d+\.\d+", next(iter(folders)))
    assert {"fx_graph_readable.py", "fx_graph_transformed.py", "ir_pre_fusion.txt",
            "ir_post_fusion.txt", "output_code.py"} <= next(iter(folders.values()))


def test_torch_compile_debug_is_read_when_inductors_config_is_imported(monkeypatch):
    import torch._inductor.config as inductor_config

    probe = "import torch._inductor.config as c; print(c.trace.enabled)"
    env = {**os.environ, "TORCH_COMPILE_DEBUG": "1"}
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.stdout.split() == ["True"], run.stderr[-2000:]
    monkeypatch.setenv("TORCH_COMPILE_DEBUG", "1")  # too late: the config was imported
    assert inductor_config.trace.enabled is False


def test_freezing_takes_x_alone_and_packs_linears_for_mkl_only_in_a_build_with_mkl():
    mlp = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    x = torch.randn(8, 16)
    with torch.no_grad():
        plain = inductor_code(mlp, x)
        frozen = inductor_code(mlp, x, options={"freezing": True})
    assert plain.wrapper.splitlines()[1].strip() == "arg0_1, arg1_1, arg2_1, arg3_1, arg4_1 = args"
    assert frozen.wrapper.splitlines()[1].strip() == "arg4_1, = args"
    assert "_frozen_param" in frozen.wrapper and "_frozen_param" not in plain.wrapper
    assert {e.name for e in plain.externs} == {"extern_kernels.addmm"}
    uses_mkl = any(e.name.startswith("mkl._mkl_linear") for e in frozen.externs)
    if torch.backends.mkl.is_available():
        assert uses_mkl and len(frozen.kernels) == 2  # bias additions in the kernels
    else:
        assert not uses_mkl


def test_eager_chain_in_the_benchmark_runs_five_ops_and_a_copy_six_passes():
    from torch.utils._python_dispatch import TorchDispatchMode

    ops = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            ops.append(str(func))
            return func(*args, **(kwargs or {}))

    x, out = torch.randn(16), torch.empty(16)
    with Record():
        out.copy_(torch.relu(x * 1.5 + 0.5) * 2.0 - 1.0)
    assert ops == ["aten.mul.Tensor", "aten.add.Tensor", "aten.relu.default",
                   "aten.mul.Tensor", "aten.sub.Tensor", "aten.copy_.default"]


def test_a_second_process_with_the_same_cache_folder_hits_the_caches_the_first_filled(tmp_path):
    """The warm run of section 8 really reads what the cold run wrote (and nothing else)."""
    import ast

    probe = ("import torch; from torch._dynamo.utils import counters;"
             " torch.compile(lambda x: torch.relu(x * 1.5 + 0.5) * 2.0 - 1.0)(torch.randn(1000));"
             " print({k: v for g in ('aot_autograd', 'inductor')"
             " for k, v in sorted(counters[g].items()) if 'cache' in k})")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}
    env.pop("TORCHINDUCTOR_FORCE_DISABLE_CACHES", None)
    seen = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        seen.append(ast.literal_eval(run.stdout.splitlines()[-1]))
    assert seen[0] == {"autograd_cache_miss": 1, "autograd_cache_saved": 1, "fxgraph_cache_miss": 1}
    assert seen[1] == {"autograd_cache_hit": 1, "fxgraph_cache_hit": 1}


# --- section 5: pattern-matcher passes --------------------------------------------------------

def _post_grad_ops(code):
    return [str(n.target) for n in code.post_grad[0].nodes if n.op == "call_function"]


def _pattern_counts():
    return {k: v for k, v in counters["inductor"].items() if k.startswith("pattern_matcher")}


def test_joint_graph_pattern_removes_a_permute_pair_that_cancels_and_counts_the_match():
    def undo(x):
        return x.permute(1, 0).permute(1, 0) * 2

    x = torch.randn(4, 8)
    off = inductor_code(undo, x, options={"pattern_matcher": False})
    assert _post_grad_ops(off) == ["aten.permute.default", "aten.permute.default",
                                   "aten.mul.Tensor"]
    assert _pattern_counts() == {}
    counters.clear()
    on = inductor_code(undo, x)
    assert _post_grad_ops(on) == ["aten.mul.Tensor"]
    assert _pattern_counts() == {"pattern_matcher_count": 1, "pattern_matcher_nodes": 2}
    from torch._inductor.fx_passes import joint_graph
    assert "pointless_permute_pair" in vars(joint_graph)


def test_pattern_matcher_count_counts_handlers_run_not_graphs_changed():
    """pointless_convert matches float32 -> float16 -> float32 but keeps it (it rounds)."""
    from torch._inductor.fx_passes.joint_graph import pointless_convert

    def round_trip(x):
        return x.to(torch.float16).to(torch.float32) + 1

    code = inductor_code(round_trip, torch.randn(4, 8))
    assert _post_grad_ops(code) == ["prims.convert_element_type.default",
                                    "prims.convert_element_type.default", "aten.add.Tensor"]
    assert _pattern_counts() == {"pattern_matcher_count": 1, "pattern_matcher_nodes": 2}
    assert "dtype1.itemsize < dtype2.itemsize" in inspect.getsource(pointless_convert)


def test_the_three_pass_points_and_pre_grad_fusions_off_by_default():
    import torch._inductor.config as ic
    from torch._inductor.fx_passes import post_grad, pre_grad

    assert ic.pre_grad_fusion_options == {}
    doc = pre_grad.pre_grad_passes.__doc__
    assert "post_grad.py or joint_graph.py" in doc
    src = inspect.getsource(post_grad.post_grad_passes)
    # the user's pre-pass runs before Inductor's own pattern passes, the post-pass after them
    assert (src.index("config.post_grad_custom_pre_pass") < src.index("pass_patterns")
            < src.index("config.post_grad_custom_post_pass"))
    for name in ("post_grad_custom_pre_pass", "post_grad_custom_post_pass",
                 "joint_custom_pre_pass", "joint_custom_post_pass", "pattern_matcher"):
        assert hasattr(ic, name)


def _log1p_pass():
    from torch._inductor.pattern_matcher import (
        PatternMatcherPass, fwd_only, register_replacement)

    passes = PatternMatcherPass(pass_name="log1p_pass")

    def search(x):
        return torch.log(x + 1)

    def replace(x):
        return torch.log1p(x)

    pattern = register_replacement(search, replace, [torch.empty(4)], fwd_only, passes)
    return passes, pattern


def test_register_replacement_rewrites_log_x_plus_1_to_log1p_and_leaves_log_x_plus_2():
    passes, pattern = _log1p_pass()
    assert str(pattern).startswith("CallFunction(aten.log.default, CallFunction("
                                   "aten.add.Tensor, KeywordArg('x'), *)")
    x = torch.rand(4, 8)
    one = inductor_code(lambda x: torch.log(x + 1) * 2, x,
                        options={"post_grad_custom_pre_pass": passes.apply})
    assert _post_grad_ops(one) == ["aten.log1p.default", "aten.mul.Tensor"]
    assert "std::log1p(" in one.kernels[0].source
    assert counters["inductor"]["pattern_matcher_count"] == 1
    counters.clear()
    two = inductor_code(lambda x: torch.log(x + 2) * 2, x,
                        options={"post_grad_custom_pre_pass": passes.apply})
    assert _post_grad_ops(two) == ["aten.add.Tensor", "aten.log.default", "aten.mul.Tensor"]
    assert "std::log1p(" not in two.kernels[0].source
    assert counters["inductor"]["pattern_matcher_count"] == 0
    import torch._inductor.config as ic
    with ic.patch(post_grad_custom_pre_pass=passes.apply, fx_graph_cache=False):
        torch.testing.assert_close(torch.compile(lambda x: torch.log(x + 1))(x),
                                   torch.log(x + 1))


def test_register_replacement_first_match_ignores_int_and_float_constants():
    from torch._inductor import pattern_matcher

    src = inspect.getsource(pattern_matcher.gen_pattern_and_search_gm)
    assert "ignore_types=(int, float, list, torch.device, torch.dtype)" in src


def test_a_plain_function_as_custom_pass_makes_the_fx_graph_cache_bypass():
    import torch._inductor.config as ic
    from torch._inductor.custom_graph_pass import CustomGraphPass

    passes, _ = _log1p_pass()
    assert not isinstance(passes.apply, CustomGraphPass)
    with ic.patch(post_grad_custom_pre_pass=passes.apply, fx_graph_cache=True,
                  force_disable_caches=False):
        torch.compile(lambda x: torch.log(x + 1) * 3)(torch.rand(4, 8))
    assert counters["inductor"]["fxgraph_cache_bypass"] == 1


# --- section 5: when the scheduler fuses ------------------------------------------------------

def _fusion(fn, *args, **options):
    """(scheduler nodes before fusion, after fusion, refusal reasons) from the fusion log."""
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger = logging.getLogger("torch._inductor.scheduler.__fusion")
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logging.disable(logging.NOTSET)  # fresh_dynamo silences logging
    try:
        code = inductor_code(fn, *args, options=options)
    finally:
        logging.disable(logging.WARNING)
        logger.removeHandler(handler)
        logger.setLevel(level)
    rounds = [re.search(r"fused (\d+) nodes into (\d+) nodes", l) for l in lines]
    rounds = [m for m in rounds if m]
    reasons = {l.split(": ", 1)[1] for l in lines if l.startswith("cannot fuse")}
    return int(rounds[0][1]), int(rounds[-1][2]), reasons, code


def test_fusion_config_defaults_the_lecture_names():
    import torch._inductor.config as ic

    assert ic.max_fusion_size == 64
    assert ic.score_fusion_memory_threshold == 10
    assert ic.aggressive_fusion is False
    assert ic.cpu_backend == "cpp"


def test_can_fuse_refuses_extern_nodes_no_shared_data_and_too_many_nodes():
    from torch._inductor import choices, scheduler

    can_fuse = inspect.getsource(scheduler.Scheduler._can_fuse)
    assert "node1 is extern but not a triton kernel" in can_fuse
    assert "node2 is extern or nop" in can_fuse
    heuristics = inspect.getsource(choices.InductorChoices.can_fuse)
    assert "no shared data" in heuristics and "config.max_fusion_size" in heuristics
    assert "not config.aggressive_fusion" in heuristics
    horizontal = inspect.getsource(choices.InductorChoices.can_fuse_horizontal)
    assert "config.score_fusion_memory_threshold" in horizontal
    assert "are_long_distant_nodes" in horizontal
    assert "for i in range(10)" in inspect.getsource(scheduler.Scheduler.fuse_nodes)
    # the threshold compares bytes: score_fusion_memory counts bytes unless told otherwise
    score = inspect.signature(scheduler.Scheduler.score_fusion_memory)
    assert score.parameters["count_bytes"].default is True


def test_cpp_backend_fuses_a_reduction_with_its_reader_only_through_outer_loops():
    from torch._inductor.codegen.cpp import CppScheduling

    vertical = inspect.getsource(CppScheduling.can_fuse_vertical)
    assert "not node1.is_reduction()" in vertical and "can_fuse_vertical_outer_loop" in vertical
    depth = inspect.getsource(CppScheduling._get_outer_loop_fusion_depth)
    assert "min(len(vars1), len(vars2))" in depth


def test_lowering_inlines_a_pointwise_chain_into_one_scheduler_node():
    before, after, reasons, code = _fusion(lambda x: torch.relu(x * 2 + 1), torch.randn(8, 16))
    assert (before, after, reasons) == (1, 1, set())
    assert code.kernels[0].nodes == ("mul", "add", "relu")


def test_siblings_reading_the_same_input_fuse_horizontally():
    before, after, reasons, _ = _fusion(lambda x: (x.sin(), x.cos()), torch.randn(8, 16))
    assert (before, after, reasons) == (2, 1, set())


def test_row_sum_and_the_division_that_reads_it_fuse_by_outer_loop_fusion():
    from torch._inductor import metrics

    metrics.reset()
    before, after, _, code = _fusion(lambda x: x / x.sum(1, keepdim=True), torch.randn(8, 16))
    assert (before, after) == (2, 1)
    assert len(metrics.cpp_outer_loop_fused_inner_counts) == 1


def test_full_sum_and_the_division_stay_two_nodes_with_no_logged_reason_in_one_function():
    before, after, reasons, code = _fusion(lambda x: x / x.sum(), torch.randn(8, 16))
    assert (before, after, reasons) == (2, 2, set())
    assert [k.name for k in code.kernels] == ["cpp_fused_div_sum_0"]
    top = [l for l in code.kernels[0].source.splitlines() if l.lstrip().startswith("for(")]
    assert len(top) == 2  # two loop nests in the one C++ function


def test_max_fusion_size_1_keeps_siblings_apart_and_the_log_says_why():
    before, after, reasons, _ = _fusion(lambda x: (x.sin(), x.cos()), torch.randn(8, 16),
                                        max_fusion_size=1)
    assert (before, after, reasons) == (2, 2, {"exceeds max fusion"})


def test_cpp_backend_starts_a_new_function_after_an_extern_call():
    """Consecutive nodes share one C++ function; an extern call (mm) ends it."""
    w = torch.randn(16, 4)
    code = inductor_code(lambda x, w: (x.sin() @ w).cos(), torch.randn(8, 16), w)
    assert len(code.kernels) == 2
    assert [e.name for e in code.externs] == ["extern_kernels.mm"]
