"""Claims of lecture 06 about torch's behaviour, executed on the installed torch.

Each test pins one statement the lecture makes: the 0/1 specialization and its exceptions
(`mark_unbacked`, `backed_size_oblivious`; section 5), the builtin `print` that compiled code keeps
calling after a module-level `print` shadows it, in every entry compiled before (section 6), and the
everyday switches of section 8 (`TORCH_LOGS`, `TORCHDYNAMO_VERBOSE`, `TORCH_COMPILE_DEBUG`: its log
files get only what `TORCH_LOGS` lets through, and its notebook equivalent). If a torch release changes the behaviour, the test
fails and the lecture's prose has to change with it. The functions here are not the lecture's own,
so a pass is not a copy of a notebook output.
"""
import builtins
import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
import types

import pytest
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
from torch._logging._internal import _parse_log_settings

from fxcourse import bytecode, torch_logs


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
    torch._dynamo.reset()


@contextlib.contextmanager
def logs(**switches):
    """torch's log records for one block (set_logs(**switches)), collected, not printed."""
    logging.disable(logging.NOTSET)
    try:
        with torch_logs(**switches) as records:
            yield records
    finally:
        logging.disable(logging.WARNING)


class Graphs(list):
    """A backend that keeps every graph it is given and runs it as captured."""

    def __call__(self, gm, example_inputs):
        self.append(gm)
        return gm.forward


def sym_inputs(gm) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "placeholder" and isinstance(n.meta.get("example_value"), torch.SymInt))


def cube(x):
    return x * x * x


# --- section 5: sizes 0 and 1 ----------------------------------------------------------------

def test_sizes_0_and_1_of_a_dynamic_dimension_get_static_entries_of_their_own():
    graphs = Graphs()
    compiled = torch.compile(cube, backend=graphs, dynamic=True)
    compiled(torch.ones(3))
    compiled(torch.ones(5))
    assert len(graphs) == 1 and sym_inputs(graphs[0]) > 0
    compiled(torch.ones(1))
    compiled(torch.ones(0))
    assert len(graphs) == 3
    assert sym_inputs(graphs[1]) == 0 and sym_inputs(graphs[2]) == 0  # sizes baked in
    guards = [g for section in bytecode(cube).sections[1:] for g in section.guards]
    assert any("2 <= L['x'].size()[0]" in g for g in guards)


def test_a_mark_unbacked_dimension_is_not_specialized_on_0_or_1():
    graphs = Graphs()
    compiled = torch.compile(cube, backend=graphs)
    for rows in (4, 1, 0):
        x = torch.ones(rows, 2)
        torch._dynamo.decorators.mark_unbacked(x, 0)
        torch.testing.assert_close(compiled(x), cube(x))
    assert len(graphs) == 1



def test_backed_size_oblivious_also_serves_sizes_0_and_1_from_the_dynamic_entry():
    graphs = Graphs()
    with torch.fx.experimental._config.patch(backed_size_oblivious=True):
        compiled = torch.compile(cube, backend=graphs, dynamic=True)
        for rows in (5, 1, 0, 2):
            torch.testing.assert_close(compiled(torch.ones(rows)), cube(torch.ones(rows)))
    assert len(graphs) == 1 and sym_inputs(graphs[0]) > 0
    assert len(_debug_get_cache_entry_list(cube.__code__)) == 1

# --- section 6: a module-level print written after the compile --------------------------------

PRINTING_MODULE = '''
import torch

def two_halves(x, y):
    z = x * 2
    print("halfway")
    return torch.sin(z) + y
'''


def printing_module() -> types.ModuleType:
    module = types.ModuleType("printing_module")
    exec(compile(PRINTING_MODULE, "<printing_module>", "exec"), module.__dict__)
    return module


def shadow_print(module) -> list:
    """Define a module-level print in module; return the list of the calls it hears."""
    heard: list = []
    module.heard = heard
    exec("def print(*args):\n    heard.append(args)\n", module.__dict__)
    return heard


def test_compiled_code_keeps_the_builtin_print_after_a_module_level_print_shadows_it():
    module = printing_module()
    fn, x = module.two_halves, torch.ones(2)
    compiled = torch.compile(fn, backend="eager")
    compiled(x, x)
    heard = shadow_print(module)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        compiled(x, x)
    assert stdout.getvalue() == "halfway\n" and heard == []  # the builtin, not the new print
    assert len(_debug_get_cache_entry_list(fn.__code__)) == 1  # no guard failed: no recompile
    with contextlib.redirect_stdout(stdout):
        fn(x, x)
    assert heard == [("halfway",)]  # eager finds the module's print
    print_guards = [g for g in bytecode(fn).sections[1].guards if "print" in g]
    assert print_guards == [g for g in print_guards if "G['__builtins_dict___0']['print']" in g]
    assert len(print_guards) == 1 and print_guards[0].startswith("ID_MATCH")


def test_after_reset_dynamo_reads_the_shadowing_print():
    module = printing_module()
    fn, x = module.two_halves, torch.ones(2)
    torch.compile(fn, backend="eager")(x, x)
    heard = shadow_print(module)
    torch._dynamo.reset()
    torch.compile(fn, backend="eager")(x, x)
    assert heard == [("halfway",)]



def test_a_recompile_reads_the_shadowing_print_only_in_its_new_entry():
    module = printing_module()
    fn, x = module.two_halves, torch.ones(2)
    compiled = torch.compile(fn, backend="eager", dynamic=False)
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(x, x)
    heard = shadow_print(module)
    compiled(x.double(), x.double())  # another dtype: a recompile, a new entry
    assert heard == [("halfway",)]
    assert len(_debug_get_cache_entry_list(fn.__code__)) == 2
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        compiled(x, x)  # the first entry: still the builtin
    assert heard == [("halfway",)] and stdout.getvalue() == "halfway\n"

def test_replacing_builtins_print_fails_the_guard_and_recompiles(monkeypatch):
    module = printing_module()
    fn, x = module.two_halves, torch.ones(2)
    compiled = torch.compile(fn, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()):
        compiled(x, x)
    heard: list = []
    monkeypatch.setattr(builtins, "print", lambda *args: heard.append(args))
    compiled(x, x)
    monkeypatch.undo()
    assert heard == [("halfway",)]
    assert len(_debug_get_cache_entry_list(fn.__code__)) == 2


# --- section 8: the everyday switches --------------------------------------------------------

def scaled_sin(x):
    return torch.sin(x) * 2


def test_torch_logs_string_maps_to_the_set_logs_switches():
    state = _parse_log_settings("+dynamo,graph_code,output_code")
    assert state.log_qname_to_level["torch._dynamo"] == logging.DEBUG
    assert {"graph_code", "output_code"} <= set(state.artifact_names)
    assert _parse_log_settings("dynamo").log_qname_to_level["torch._dynamo"] == logging.INFO


_LOG_SCRIPT = """
import json, logging, sys
import torch
from fxcourse import torch_logs


def scaled_sin(x):
    return torch.sin(x) * 2


logging.disable(logging.NOTSET)
with torch_logs(**json.loads(sys.argv[1])) as records:
    torch.compile(scaled_sin, backend="eager")(torch.ones(3))
print("RECORDS " + json.dumps([(r.name, r.levelno, r.getMessage()) for r in records]))
"""


def fresh_records(tmp_path, **switches) -> list[tuple[str, int, str]]:
    """(logger name, level, message) of every record torch_logs(**switches) collected while a
    fresh interpreter compiled scaled_sin once: no log state left by other tests."""
    import json

    script = tmp_path / "log_probe.py"  # a file, so Dynamo can quote the source line
    script.write_text(_LOG_SCRIPT)
    done = subprocess.run([sys.executable, str(script), json.dumps(switches)], capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items()
                                            if k not in ("TORCH_LOGS", "TORCHDYNAMO_VERBOSE", "TORCH_TRACE")})
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("RECORDS "))
    return [tuple(r) for r in json.loads(line[len("RECORDS "):])]


def test_graph_code_logs_the_captured_graph_with_fake_tensor_types_and_source_lines(tmp_path):
    ((name, _, message),) = fresh_records(tmp_path, graph_code=True)
    assert name == "torch._dynamo.output_graph.__graph_code"
    assert message.startswith("TRACED GRAPH") and "__compiled_fn_" in message
    assert 'L_x_: "f32[3][1]cpu"' in message
    assert "torch.sin(l_x_)" in message and "sin * 2" in message
    assert "in scaled_sin, code: return torch.sin(x) * 2" in message


def test_dynamo_at_info_logs_the_steps_of_a_compile(tmp_path):
    records = fresh_records(tmp_path, dynamo=logging.INFO)
    messages = [m for _, _, m in records]
    assert all(level >= logging.INFO for _, level, _ in records)
    assert any(m.startswith("Step 1: torchdynamo start tracing scaled_sin") for m in messages)
    assert "Step 1: torchdynamo done tracing scaled_sin (RETURN_VALUE)" in messages
    assert "Step 2: calling compiler function eager" in messages
    assert not any(name.split(".")[-1].startswith("__") for name, _, _ in records)  # no artifacts


def test_plus_dynamo_adds_the_artifacts_under_dynamo_and_traces_each_instruction(tmp_path):
    records = fresh_records(tmp_path, dynamo=logging.DEBUG)
    artifacts = {name.split(".__")[1] for name, _, _ in records if ".__" in name}
    assert {"graph_code", "guards", "trace_bytecode", "trace_call", "trace_source"} <= artifacts
    assert "output_code" not in artifacts  # off by default: it must be named
    steps = [m for name, _, m in records if name.endswith("__trace_bytecode")]
    assert steps[1] == "TRACE LOAD_GLOBAL torch []"
    assert any(s.startswith("TRACE LOAD_FAST x ") for s in steps)
    assert steps[-1] == "TRACE RETURN_VALUE None [TensorVariable()]"



def test_trace_bytecode_messages_start_with_trace_and_a_tensor_variable_holds_a_fake_tensor():
    """Section 8 cuts each whole message, `TRACE` included; a TensorVariable is a variable
    tracker whose example value (the graph node's) is a fake tensor."""
    with logs(dynamo=logging.DEBUG) as records:
        graphs = Graphs()
        torch.compile(scaled_sin, backend=graphs)(torch.ones(3))
    steps = [r.getMessage() for r in records if r.name.endswith("__trace_bytecode")]
    assert steps and all(s.startswith("TRACE ") for s in steps)
    assert any("TensorVariable()" in s for s in steps)
    from torch._dynamo.variables import TensorVariable
    from torch._dynamo.variables.base import VariableTracker
    from torch._subclasses.fake_tensor import FakeTensor
    assert issubclass(TensorVariable, VariableTracker) and not issubclass(TensorVariable, torch.Tensor)
    (sin,) = [n for n in graphs[0].graph.nodes if n.target is torch.sin]
    assert isinstance(sin.meta["example_value"], FakeTensor)

def test_output_code_logs_inductors_module_with_a_fused_kernel_and_call():
    with logs(output_code=True) as records:
        torch.compile(scaled_sin)(torch.ones(3))
    messages = [r.getMessage() for r in records if r.name == "torch._inductor.codecache.__output_code"]
    code = next(m for m in messages if m.startswith("Output code:"))
    assert "cpp_fused_mul_sin_0 = async_compile.cpp_pybinding" in code
    assert "std::sin(tmp0)" in code and "def call(self, args):" in code
    assert "cpp_fused_mul_sin_0(arg0_1, buf0)" in code
    assert any(m.startswith("Output code written to: ") for m in messages)


def test_torchdynamo_verbose_sets_dynamo_config_verbose():
    program = "import torch._dynamo.config as c; print(c.verbose)"
    for value, expected in (("1", "True"), ("0", "False")):
        run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                             env={**os.environ, "TORCHDYNAMO_VERBOSE": value}, check=True)
        assert run.stdout.strip() == expected


def two_halves(x, y):
    z = x * 2
    print("halfway")
    return torch.sin(z) + y


def test_verbose_keeps_dynamos_frames_in_the_traceback_and_drops_the_hint():
    def error_for(verbose):
        torch._dynamo.reset()
        with torch._dynamo.config.patch(verbose=verbose):
            with pytest.raises(torch._dynamo.exc.Unsupported) as info:
                torch.compile(two_halves, backend="eager", fullgraph=True)(torch.ones(2), torch.ones(2))
        return info.value

    short, full = error_for(False), error_for(True)
    short_files = [f.filename.replace("\\", "/") for f in traceback.extract_tb(short.__traceback__)]
    full_files = [f.filename.replace("\\", "/") for f in traceback.extract_tb(full.__traceback__)]
    assert sum("torch/_dynamo/" in f for f in short_files) == 1
    assert short_files[-1].endswith("torch/_dynamo/eval_frame.py")
    assert sum("torch/_dynamo/" in f for f in full_files) > 10
    assert full_files[-1].endswith("torch/_dynamo/exc.py")
    assert "Set TORCHDYNAMO_VERBOSE=1" in str(short) and "Set TORCHDYNAMO_VERBOSE=1" not in str(full)


UNSET = ("TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_JOB_ID", "TORCH_COMPILE_DEBUG_DIR")


def compile_debug_sizes(folder, cache_dir, **extra_env) -> dict[str, int]:
    """Run a small program with TORCH_COMPILE_DEBUG=1 in folder; its debug folder's files and sizes."""
    (folder / "program.py").write_text(
        "import torch\n\ndef scaled_sin(x):\n    return torch.sin(x) * 2\n\ntorch.compile(scaled_sin)(torch.ones(3))\n")
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env.update({"TORCH_COMPILE_DEBUG": "1", "TORCHINDUCTOR_CACHE_DIR": str(cache_dir), **extra_env})
    subprocess.run([sys.executable, "program.py"], cwd=folder, env=env, capture_output=True, check=True)
    return {p.relative_to(folder).as_posix(): p.stat().st_size
            for p in (folder / "torch_compile_debug").rglob("*") if p.is_file()}


def compile_debug_files(folder, cache_dir) -> set[str]:
    return set(compile_debug_sizes(folder, cache_dir))


def log_sizes(sizes: dict[str, int]) -> dict[str, int]:
    """The sizes of the two log files of the one run folder, by name."""
    logs_ = {name.rsplit("/", 1)[1]: size for name, size in sizes.items()
             if name.endswith(("torchdynamo/debug.log", "torchinductor/aot_model___0_debug.log"))}
    assert set(logs_) == {"debug.log", "aot_model___0_debug.log"}
    return logs_


def test_torch_compile_debug_writes_logs_graphs_and_code_but_not_for_a_cached_graph(tmp_path):
    cache = tmp_path / "inductor-cache"  # empty: the first run compiles
    first = tmp_path / "first"
    first.mkdir()
    files = compile_debug_files(first, cache)
    run_dirs = {f.split("/")[1] for f in files if f.split("/")[1].startswith("run_")}
    assert len(run_dirs) == 1
    names = {f.split("/", 2)[2] for f in files if f.split("/")[1] in run_dirs}
    graph = "torchinductor/model__0_inference_0.0/"
    assert {"torchdynamo/debug.log", "torchinductor/aot_model___0_debug.log"} <= names
    assert {graph + n for n in ("fx_graph_readable.py", "fx_graph_runnable.py", "fx_graph_transformed.py",
                                "ir_pre_fusion.txt", "ir_post_fusion.txt", "output_code.py")} <= names
    assert any(f.startswith("torch_compile_debug/tlparse/") and f.endswith(".log") for f in files)
    second = tmp_path / "second"
    second.mkdir()
    cached = compile_debug_files(second, cache)  # the same graph, now served from Inductor's cache
    assert not any("/torchinductor/model__" in f for f in cached)
    assert any(f.endswith("torchdynamo/debug.log") for f in cached)


def test_torch_compile_debug_log_files_get_only_what_torch_logs_lets_through(tmp_path):
    """Section 8: on its own, TORCH_COMPILE_DEBUG=1 leaves debug.log and the AOT log empty;
    with TORCH_LOGS=+dynamo debug.log holds Dynamo's DEBUG log; nothing fills the AOT log."""
    alone = tmp_path / "alone"
    alone.mkdir()
    assert log_sizes(compile_debug_sizes(alone, tmp_path / "cache1")) == {
        "debug.log": 0, "aot_model___0_debug.log": 0}
    with_logs = tmp_path / "with_logs"
    with_logs.mkdir()
    sizes = compile_debug_sizes(with_logs, tmp_path / "cache2", TORCH_LOGS="+dynamo,+aot")
    assert log_sizes(sizes)["debug.log"] > 0 and log_sizes(sizes)["aot_model___0_debug.log"] == 0
    (debug_log,) = with_logs.glob("torch_compile_debug/run_*/torchdynamo/debug.log")
    text = debug_log.read_text()
    assert "torchdynamo start tracing scaled_sin" in text and "TRACE LOAD_GLOBAL torch" in text


IN_PROCESS = """
import os, torch, torch._inductor.config
torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))
os.environ["TORCH_COMPILE_DEBUG"] = "1"
torch._inductor.config.trace.enabled = True
torch.compile(lambda x: torch.sin(x) * 2)(torch.ones(3))
"""


def test_torch_compile_debug_set_after_import_with_trace_enabled_gives_all_but_tlparse(tmp_path):
    """Section 8's table: the notebook equivalent of TORCH_COMPILE_DEBUG=1."""
    env = {k: v for k, v in os.environ.items() if k not in UNSET + ("TORCH_COMPILE_DEBUG",)}
    env.update({"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")})
    subprocess.run([sys.executable, "-c", IN_PROCESS], cwd=tmp_path, env=env, capture_output=True, check=True)
    files = {p.relative_to(tmp_path).as_posix() for p in (tmp_path / "torch_compile_debug").rglob("*")
             if p.is_file()}
    assert any(f.endswith("/torchdynamo/debug.log") for f in files)
    assert any("/torchinductor/model__" in f and f.endswith("/output_code.py") for f in files)
    assert not any(f.startswith("torch_compile_debug/tlparse/") for f in files)  # read at import
