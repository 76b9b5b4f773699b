"""Claims of lectures 11-12 about torch's behaviour, executed on the installed torch.

Each test pins one statement the lectures make (several were once made wrongly): if a torch
release changes the behaviour, the test fails and the lecture's prose has to change with it.
The functions here are not the lectures' own, so a pass is not a copy of a notebook output.
"""
import importlib
import io
import json
import logging
import math
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch.library import custom_op, opcheck

from fxcourse import aot_graphs, inductor_code, zoo


@pytest.fixture(autouse=True)
def quiet_and_fresh():
    torch._dynamo.reset()
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    logging.disable(logging.NOTSET)
    torch._dynamo.reset()


def _py_erf(x: torch.Tensor) -> torch.Tensor:
    values = [math.erf(v) for v in x.flatten().tolist()]
    return torch.tensor(values, dtype=x.dtype).reshape(x.shape)


# ----------------------------------------------------------------------------------------
# lecture 11

_LIB = torch.library.Library("test1112", "DEF")  # kept alive for the whole module
_LIB.define("grad_in_backend(Tensor x) -> Tensor")
# the mistake test_autograd_registration exists for: a backend kernel whose output
# requires grad, with no kernel at an Autograd key
_LIB.impl("grad_in_backend", lambda x: (x.detach() * 2).requires_grad_(), "CPU")


def test_opcheck_skips_autograd_registration_when_no_input_requires_grad():
    op = torch.ops.test1112.grad_in_backend.default
    skipped = opcheck(op, (torch.randn(3),), raise_exception=False)
    checked = opcheck(op, (torch.randn(3, requires_grad=True),), raise_exception=False)
    assert skipped["test_autograd_registration"] == "SUCCESS"  # reported, not run
    assert isinstance(checked["test_autograd_registration"], AssertionError)


def test_custom_op_without_formula_has_an_autograd_kernel_that_raises_on_backward():
    @custom_op("test1112::no_formula", mutates_args=())
    def no_formula(x: torch.Tensor) -> torch.Tensor:
        return _py_erf(x)

    no_formula.register_fake(lambda x: x.new_empty(x.shape))
    name = "test1112::no_formula"
    assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "Autograd")
    x = torch.randn(3, 2, requires_grad=True)
    result = opcheck(no_formula, (x,), raise_exception=False)
    assert result["test_autograd_registration"] == "SUCCESS"
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        no_formula(x).sum().backward()


@custom_op("test1112::scale_", mutates_args=("x",))
def _scale_(x: torch.Tensor, s: float) -> None:
    x.mul_(s)


def test_mutates_args_marks_the_argument_mutable_in_the_schema():
    assert str(torch.ops.test1112.scale_.default._schema) == (
        "test1112::scale_(Tensor(a0!) x, float s) -> ()"
    )
    t = torch.ones(3)
    _scale_(t, 3.0)
    assert torch.equal(t, torch.full((3,), 3.0))


@pytest.mark.parametrize("body", [lambda x: x, lambda x: x.view(-1)], ids=["input", "view"])
def test_custom_op_output_may_not_alias_an_input(body):
    name = f"test1112::alias_{body(torch.ones(1, 1)).dim()}"

    @custom_op(name, mutates_args=())
    def alias(x: torch.Tensor) -> torch.Tensor:
        return body(x)

    with pytest.raises(RuntimeError, match="may not alias any inputs"):
        alias(torch.ones(2, 2))


def test_undeclared_mutation_runs_eagerly_but_fails_opcheck_schema():
    @custom_op("test1112::sneaky", mutates_args=())
    def sneaky(x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x.clone()

    sneaky.register_fake(lambda x: torch.empty_like(x))
    sneaky(torch.ones(2))  # eager does not check
    result = opcheck(sneaky, (torch.randn(3),), raise_exception=False)["test_schema"]
    assert "not defined as mutable but was mutated" in str(result)


def _sin_scale_add(x):
    y = x.sin()
    _scale_(y, 2.0)
    return y + 1


def test_aot_autograd_functionalizes_a_mutating_custom_op():
    code = aot_graphs(_sin_scale_add, torch.randn(3)).forward.code
    assert "torch.ops.higher_order.auto_functionalized_v2(" in code
    assert "torch.ops.test1112.scale_.default" in code


def test_inductor_calls_the_mutating_op_in_place_on_its_buffer():
    code = inductor_code(_sin_scale_add, torch.randn(3))
    assert "auto_functionalized" not in code.wrapper
    assert "torch.ops.test1112.scale_.default(buf0, 2.0)" in code.wrapper
    assert [e.name for e in code.externs] == ["test1112.scale_.default"]



@custom_op("test1112::ident", mutates_args=())
def _ident(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


_ident.register_fake(lambda x: x.new_empty(x.shape))


def test_a_kernel_is_named_after_the_extern_op_that_realized_its_buffer_too():
    code = inductor_code(lambda x: _ident(torch.relu(x)) * 2 + 1, torch.randn(2, 3))
    first = code.kernels[0]
    assert first.name == "cpp_fused_ident_relu_0"  # the op's node is among its origins...
    assert "test1112.ident.default" in first.aten
    assert "ident" not in first.source.split("{", 1)[1]  # ...but the kernel computes relu
    assert "std::max" in first.source
    assert [e.name for e in code.externs] == ["test1112.ident.default"]


def test_register_kernel_adds_a_kernel_for_one_device_only():
    @custom_op("test1112::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    ran = []

    @twice.register_kernel("cpu")
    def _(x):
        ran.append("cpu")
        return x + x

    name = "test1112::twice"
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    assert has(name, "CPU") and has(name, "CompositeExplicitAutograd")
    assert not has(name, "CUDA")
    assert torch.equal(twice(torch.ones(2)), torch.full((2,), 2.0)) and ran == ["cpu"]


@pytest.mark.slow
def test_load_inline_leaves_an_up_to_date_library_untouched_and_rebuilds_a_stale_one(
    tmp_path, monkeypatch
):
    from torch.utils.cpp_extension import load_inline

    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    source = "int test1112_answer() { return 1; }\n"  # registers nothing: loads twice

    def build(src: str) -> list[tuple[str, int]]:
        load_inline(name="test1112_build", cpp_sources=[src], is_python_module=False,
                    build_directory=str(tmp_path))
        return [(p.name, p.stat().st_mtime_ns) for p in sorted(tmp_path.glob("*.so"))]

    first = build(source)
    assert len(first) == 1
    assert build(source) == first  # up to date: ninja had nothing to do
    # a library exists, yet a changed source is built again: "a .so exists" says nothing
    assert build(source + "// changed\n") != first


# --- lecture 11 §8: what an AOTInductor deployment needs from a custom op

_TORCH_DIR = Path(torch.__file__).parent
_CPP_OP = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
at::Tensor scaled_add_cpu(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return a + alpha * b;
}
at::Tensor scaled_add_meta(const at::Tensor& a, const at::Tensor& b, double alpha) {
  return at::empty_like(a, a.options().memory_format(at::MemoryFormat::Contiguous));
}
TORCH_LIBRARY(test1112_cpp, m) { m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor"); }
TORCH_LIBRARY_IMPL(test1112_cpp, CPU, m) { m.impl("scaled_add", &scaled_add_cpu); }
TORCH_LIBRARY_IMPL(test1112_cpp, Meta, m) { m.impl("scaled_add", &scaled_add_meta); }
"""
# a C++ program with no Python in it: dlopen the op library (if given), run the package
_DRIVER = r"""
#include <dlfcn.h>
#include <iostream>
#include <ATen/ATen.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
int main(int argc, char** argv) {
  if (argc > 2 && !dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) { std::cout << dlerror(); return 2; }
  try {
    torch::inductor::AOTIModelPackageLoader loader(argv[1]);
    std::cout << "ran " << loader.run({at::ones({2, 3})})[0].sum().item<float>() << std::endl;
  } catch (const std::exception& e) {
    std::cout << "failed: " << e.what() << std::endl;
  }
}
"""
_PY_OP_MODULE = """
import math, torch

@torch.library.custom_op("test1112aoti::erf", mutates_args=())
def erf(x: torch.Tensor) -> torch.Tensor:
    return torch.tensor([math.erf(v) for v in x.flatten().tolist()]).reshape(x.shape)

erf.register_fake(lambda x: x.new_empty(x.shape))
"""
_LOADER = """
import sys, torch
if "python" in sys.argv:
    import test1112_ops
if "c++" in sys.argv:
    torch.ops.load_library(sys.argv[2])
from torch._inductor import aoti_load_package
try:
    runner = aoti_load_package(sys.argv[1])
except RuntimeError as exc:
    sys.exit(print("load failed:", str(exc).splitlines()[0]))
print("ran", float(runner(torch.ones(2, 3)).sum()))
"""


def _gxx(*args: str) -> None:
    abi = int(torch.compiled_with_cxx11_abi())
    subprocess.run(["g++", "-std=c++20", "-O1", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
                    f"-I{_TORCH_DIR / 'include'}", *args, f"-L{_TORCH_DIR / 'lib'}",
                    "-ltorch", "-ltorch_cpu", "-lc10", f"-Wl,-rpath,{_TORCH_DIR / 'lib'}"],
                   check=True, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def aoti_ops(tmp_path_factory):
    """The C++ op built with plain g++ (no Python headers), the Python op in a module of its
    own, and two AOTInductor packages: one calling both ops, one calling only the C++ op."""
    work = tmp_path_factory.mktemp("aoti_ops")
    (work / "op.cpp").write_text(_CPP_OP)
    library = work / "libtest1112_cpp.so"
    _gxx("-shared", "-fPIC", str(work / "op.cpp"), "-o", str(library))
    (work / "test1112_ops.py").write_text(_PY_OP_MODULE)
    sys.path.insert(0, str(work))
    try:
        importlib.import_module("test1112_ops")  # registers test1112aoti::erf here
    finally:
        sys.path.remove(str(work))
    torch.ops.load_library(str(library))
    erf, scaled_add = torch.ops.test1112aoti.erf, torch.ops.test1112_cpp.scaled_add

    class Both(torch.nn.Module):
        def forward(self, x):
            return scaled_add(erf(torch.relu(x)), x, 0.5) * 2 + 1

    class CppOnly(torch.nn.Module):
        def forward(self, x):
            return scaled_add(torch.relu(x), x, 0.5)

    from torch._inductor import aoti_compile_and_package

    x = torch.ones(2, 3)
    packages = {name: aoti_compile_and_package(torch.export.export(model(), (x,)),
                                               package_path=str(work / f"{name}.pt2"))
                for name, model in (("both", Both), ("cpp", CppOnly))}
    wants = {"both": float(Both()(x).sum()), "cpp": float(CppOnly()(x).sum())}
    return {"work": work, "library": str(library), "packages": packages, "wants": wants}


def _load_fresh(aoti_ops, package: str, *register: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _LOADER, aoti_ops["packages"][package], aoti_ops["library"],
         *register], cwd=aoti_ops["work"], capture_output=True, text=True, timeout=600)
    return done.stdout.strip()


@pytest.mark.slow
def test_an_aoti_package_calls_custom_ops_by_name_through_the_proxy_executor(aoti_ops):
    with zipfile.ZipFile(aoti_ops["packages"]["both"]) as archive:
        read = {n.rsplit("/", 1)[-1].split(".", 1)[-1]: archive.read(n)  # kind: after the hash
                for n in archive.namelist()}
    wrapper = read["wrapper.cpp"].decode()
    assert wrapper.count("aoti_torch_proxy_executor_call_function(proxy_executor, ") == 2
    nodes = [n["node"] for n in json.loads(read["wrapper.json"])["nodes"]]
    assert [n["target"] for n in nodes] == ["test1112aoti::erf", "test1112_cpp::scaled_add"]
    assert nodes[0]["metadata"].get("torch_library_custom_op") == "1"
    assert "torch_library_custom_op" not in nodes[1]["metadata"]


@pytest.mark.slow
def test_aoti_load_package_fails_at_load_when_a_custom_op_is_not_registered(aoti_ops):
    nothing = _load_fresh(aoti_ops, "both")
    assert nothing.startswith("load failed: Could not find schema for test1112aoti::erf.")
    assert "cannot be run via AOTI without Python environment" in nothing
    only_python = _load_fresh(aoti_ops, "both", "python")
    assert only_python.startswith(
        "load failed: Could not find schema for test1112_cpp::scaled_add")
    assert "without Python environment" not in only_python  # said only of custom_op ops
    assert _load_fresh(aoti_ops, "both", "c++").startswith(
        "load failed: Could not find schema for test1112aoti::erf.")


@pytest.mark.slow
def test_aoti_package_runs_once_the_process_registered_every_op(aoti_ops):
    out = _load_fresh(aoti_ops, "both", "python", "c++")
    assert out.startswith("ran ")
    assert math.isclose(float(out.split()[1]), aoti_ops["wants"]["both"], rel_tol=1e-5)


@pytest.mark.slow
def test_a_cpp_op_runs_from_a_cpp_only_program_and_a_python_custom_op_does_not(aoti_ops):
    work = aoti_ops["work"]
    (work / "driver.cpp").write_text(_DRIVER)
    _gxx(str(work / "driver.cpp"), "-o", str(work / "driver"))
    linked = subprocess.run(["ldd", str(work / "driver")], capture_output=True, text=True)
    assert "libpython" not in linked.stdout  # no Python in this process

    def drive(package: str, *library: str) -> str:
        # the package's library links libtorch.so: a deployment puts torch's lib on the path
        env = {**os.environ, "LD_LIBRARY_PATH": str(_TORCH_DIR / "lib")}
        return subprocess.run([str(work / "driver"), aoti_ops["packages"][package], *library],
                              capture_output=True, text=True, timeout=600, env=env).stdout.strip()

    out = drive("cpp", aoti_ops["library"])
    assert out.startswith("ran ")
    assert math.isclose(float(out.split()[1]), aoti_ops["wants"]["cpp"], rel_tol=1e-5)
    assert "Could not find schema for test1112_cpp::scaled_add" in drive("cpp")
    assert "cannot be run via AOTI without Python environment" in drive(
        "both", aoti_ops["library"])


# a C++ program with no Python in it: dlopen the op library (if given), load a TorchScript file
_TS_DRIVER = r"""
#include <dlfcn.h>
#include <iostream>
#include <torch/script.h>
int main(int argc, char** argv) {
  if (argc > 2 && !dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) { std::cout << dlerror(); return 2; }
  try {
    torch::jit::Module module = torch::jit::load(argv[1]);
    std::vector<torch::jit::IValue> inputs{at::ones({2, 3})};
    std::cout << "ran " << module.forward(inputs).toTensor().sum().item<float>() << std::endl;
  } catch (const std::exception& e) {
    std::cout << "failed: " << std::string(e.what()).substr(0, 200) << std::endl;
  }
}
"""


class _CppOpModule(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.test1112_cpp.scaled_add(torch.relu(x), x, 0.5)


@pytest.mark.slow
def test_torchscript_files_call_a_cpp_op_from_a_cpp_only_program(aoti_ops):
    """Lab 13.3's C++ custom op constraint: a scripted or traced file keeps the op as one call, and
    a C++ program with no Python runs it once the op's library is loaded, and only then."""
    work = aoti_ops["work"]
    (work / "ts_driver.cpp").write_text(_TS_DRIVER)
    _gxx(str(work / "ts_driver.cpp"), "-o", str(work / "ts_driver"))
    linked = subprocess.run(["ldd", str(work / "ts_driver")], capture_output=True, text=True)
    assert "libpython" not in linked.stdout
    x = torch.ones(2, 3)
    want = float(_CppOpModule()(x).sum())
    env = {**os.environ, "LD_LIBRARY_PATH": str(_TORCH_DIR / "lib")}
    for kind, module in (("script", torch.jit.script(_CppOpModule())),
                         ("trace", torch.jit.trace(_CppOpModule(), (x,)))):
        assert "test1112_cpp::scaled_add" in str(module.graph), kind
        path = work / f"{kind}.pt"
        module.save(str(path))

        def drive(*library: str) -> str:
            return subprocess.run([str(work / "ts_driver"), str(path), *library], capture_output=True,
                                  text=True, timeout=600, env=env).stdout.strip()

        out = drive(aoti_ops["library"])
        assert out.startswith("ran ") and math.isclose(float(out.split()[1]), want, rel_tol=1e-5), (kind, out)
        assert drive().startswith("failed: ") and "test1112_cpp::scaled_add" in drive(), kind


@pytest.mark.slow
def test_the_mlir_route_stops_at_a_cpp_op(aoti_ops):
    """... and lab 13.3's reason to leave IREE out: torch-mlir cannot lower an op it does not know."""
    from fxcourse import FxCourseError, lowering

    with pytest.raises(FxCourseError) as raised:
        lowering(_CppOpModule(), torch.ones(2, 3), stages=("linalg-on-tensors",))
    assert "test1112_cpp.scaled_add" in str(raised.value)


@pytest.mark.slow
def test_a_load_inline_library_includes_torch_extension_and_needs_python_symbols(tmp_path,
                                                                                 monkeypatch):
    from torch.utils.cpp_extension import load_inline

    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    load_inline(name="test1112_pyneeds", cpp_sources=["int test1112_two() { return 2; }\n"],
                is_python_module=False, build_directory=str(tmp_path))
    assert (tmp_path / "main.cpp").read_text().splitlines()[0] == "#include <torch/extension.h>"
    (library,) = tmp_path.glob("*.so")
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(library)],
                               capture_output=True, text=True, check=True).stdout.split()
    assert any(s.startswith(("Py", "_Py")) for s in undefined)


# ----------------------------------------------------------------------------------------
# lecture 12

TRACE: list[str] = []


def _record(message):
    TRACE.append(message)
    return ((), {})  # what the loader expects of sample inputs: (args, kwargs)


class _Payload:
    def __reduce__(self):
        return (_record, ("ran during torch.export.load",))


@pytest.fixture(scope="module")
def saved_program(tmp_path_factory):
    model, (example,) = zoo.example("mlp")
    path = tmp_path_factory.mktemp("pt2") / "mlp.pt2"
    torch.export.save(torch.export.export(model, (example,)), str(path))
    return path


def test_every_pt2_holds_sample_inputs_as_a_torch_save_pickle(saved_program):
    with zipfile.ZipFile(saved_program) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith("data/sample_inputs/model.pt")]
        inner = zipfile.ZipFile(io.BytesIO(archive.read(name)))
    assert any(n.endswith("data.pkl") for n in inner.namelist())  # torch.save's format


def test_export_load_unpickles_sample_inputs_without_weights_only(saved_program, tmp_path):
    payload = io.BytesIO()
    torch.save(_Payload(), payload)
    with pytest.raises(Exception, match="not an allowed global"):
        torch.load(io.BytesIO(payload.getvalue()))  # the safe loader refuses it...
    crafted = tmp_path / "crafted.pt2"
    with zipfile.ZipFile(saved_program) as src, zipfile.ZipFile(crafted, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("data/sample_inputs/model.pt"):
                data = payload.getvalue()
            dst.writestr(info, data)
    TRACE.clear()
    loaded = torch.export.load(str(crafted))  # ...and torch.export.load retries without it
    assert TRACE == ["ran during torch.export.load"]
    assert isinstance(loaded, torch.export.ExportedProgram)



def _saved_payload() -> bytes:
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(1), "extra": _Payload()}, buffer)
    return buffer.getvalue()


def test_no_weights_only_env_turns_off_the_default_but_not_an_explicit_true(monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    TRACE.clear()
    torch.load(io.BytesIO(_saved_payload()))  # the default: the variable wins, payload runs
    assert TRACE == ["ran during torch.export.load"]
    TRACE.clear()
    with pytest.raises(Exception, match="not an allowed global"):
        torch.load(io.BytesIO(_saved_payload()), weights_only=True)  # written out: refused
    assert TRACE == []


def test_export_load_unpickles_an_opaque_constant_even_with_weights_only_forced(
    saved_program, tmp_path, monkeypatch
):
    import json
    import pickle

    from torch.export.pt2_archive.constants import OPAQUE_OBJ_FILENAME_PREFIX

    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(Exception, match="not an allowed global"):
        torch.load(io.BytesIO(_saved_payload()), weights_only=False)  # forced to refuse
    crafted, constants_dir = tmp_path / "opaque.pt2", None
    with zipfile.ZipFile(saved_program) as src, zipfile.ZipFile(crafted, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("model_constants_config.json"):
                config = json.loads(data)
                config["config"]["extra"] = {
                    "path_name": OPAQUE_OBJ_FILENAME_PREFIX + "0", "is_param": False,
                    "use_pickle": True, "tensor_meta": None}
                data = json.dumps(config).encode()
                constants_dir = info.filename[: -len("model_constants_config.json")]
            dst.writestr(info, data)
        dst.writestr(constants_dir + OPAQUE_OBJ_FILENAME_PREFIX + "0", pickle.dumps(_Payload()))
    TRACE.clear()
    try:
        torch.export.load(str(crafted))
    except Exception:
        pass  # whatever happens after the constant was read, the payload already ran
    assert TRACE == ["ran during torch.export.load"]


_COMPILER_SCRIPT = """
import os, sys, torch, warnings, logging
warnings.simplefilter("ignore"); logging.disable(logging.WARNING)
from torch._dynamo.utils import counters
from torch._inductor.cpu_vec_isa import pick_vec_isa

if sys.argv[1] != "nocxx":
    pick_vec_isa()  # a new cache folder's instruction-set probe compiles too
    open(os.environ["CXX_LOG"], "a").write("START\\n")

def g(x):
    return torch.nn.functional.gelu(x) * 2 + torch.tanh(x)

x = torch.randn(16, 8)
if sys.argv[1] == "cold":
    torch.compile(g)(x)
    open("artifacts.bin", "wb").write(torch.compiler.save_cache_artifacts()[0])
    torch.compile(g, fullgraph=True).aot_compile(((x,), {})).save_compiled_function("g.bin")
elif sys.argv[1] == "warm":
    torch.compiler.load_cache_artifacts(open("artifacts.bin", "rb").read())
    torch.compile(g)(x)
    print("hits", counters["inductor"]["fxgraph_cache_hit"])
else:
    h = torch.compiler.load_compiled_function(open("g.bin", "rb"), f_globals={"torch": torch})
    print("loaded")
    torch.testing.assert_close(h(x), g(x))
    print("graphs", counters["stats"]["unique_graphs"])
    try:
        h(torch.randn(4, 8))
    except RuntimeError as exc:
        print("raised", str(exc).splitlines()[0])
    print("graphs", counters["stats"]["unique_graphs"])
"""


@pytest.fixture(scope="module")
def compiler_runs(tmp_path_factory):
    """Run a cold, a warm and a precompiled-load process, each with its own empty cache
    folder and a compiler wrapper that logs each library it builds; and a load with no
    compiler. Returns {mode: (stdout + stderr, libraries built after the probe)}."""
    work = tmp_path_factory.mktemp("compiler")
    (work / "s.py").write_text(_COMPILER_SCRIPT)
    cxx = work / "cxx"
    cxx.write_text('#!/bin/sh\necho "$@" | grep -o -- "-o [^ ]*" >> "$CXX_LOG"\n'
                   'exec g++ "$@"\n')
    cxx.chmod(0o755)
    results = {}
    for mode in ("cold", "warm", "pre", "nocxx"):
        log = work / f"log-{mode}"
        env = {**os.environ, "CXX_LOG": str(log), "TORCHINDUCTOR_CACHE_DIR": str(work / mode),
               "CXX": str(cxx) if mode != "nocxx" else str(work / "no-such-compiler")}
        done = subprocess.run([sys.executable, "s.py", mode], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        lines = log.read_text().splitlines() if log.exists() else []
        after = lines[lines.index("START") + 1:] if "START" in lines else lines
        results[mode] = (done.stdout + done.stderr, [l for l in after if l.endswith(".so")])
        if mode in ("cold", "warm", "pre"):
            assert done.returncode == 0, done.stderr[-2000:]
    return results


@pytest.mark.slow
def test_a_cache_artifact_hit_on_cpu_still_compiles_the_kernel(compiler_runs):
    out, libraries = compiler_runs["warm"]
    assert "hits 1" in out
    assert len(libraries) >= 1  # g++ built the kernel's library again


@pytest.mark.slow
def test_loading_a_precompiled_function_on_cpu_runs_the_compiler(compiler_runs):
    out, libraries = compiler_runs["pre"]
    assert "loaded" in out and len(libraries) >= 1
    nocxx_out, _ = compiler_runs["nocxx"]
    assert "InvalidCxxCompiler" in nocxx_out and "loaded" not in nocxx_out


@pytest.mark.slow
def test_a_precompiled_function_raises_on_guard_failure_instead_of_recompiling(
    compiler_runs,
):
    out, _ = compiler_runs["pre"]
    assert "raised GuardManager check failed" in out
    assert out.count("graphs 0") == 2  # Dynamo compiled nothing, before or after
