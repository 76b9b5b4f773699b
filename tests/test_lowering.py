"""lowering(): every stage's dialects, op histogram and types; a failing stage names itself and
the op that blocked it; torch-mlir and IREE stay out of `import fxcourse`."""
from __future__ import annotations

import json
import stat
import subprocess
import sys

import pytest
import torch
from torch import nn

import fxcourse
from fxcourse import FxCourseError, lowering, zoo
from fxcourse.tooling.doctor import lowering_findings


@pytest.fixture(scope="module")
def mlp_lowering():
    model, (x,) = zoo.example("mlp")
    return lowering(model, x, dynamic_shapes={"x": {0: torch.export.Dim("batch")}})


def test_every_stage_is_kept_in_order_with_its_dialects(mlp_lowering):
    assert [s.name for s in mlp_lowering.stages] == ["aten", "torch", "linalg-on-tensors", "stablehlo", "tosa"]
    assert mlp_lowering.stage("aten").dialects == ("aten",)
    assert mlp_lowering.stage("torch").dialects[0] == "torch"
    assert "linalg" in mlp_lowering.stage("linalg-on-tensors").dialects
    assert mlp_lowering.stage("stablehlo").dialects[0] == "stablehlo"
    assert mlp_lowering.stage("tosa").dialects[0] == "tosa"
    # no stage after the importer keeps an aten op
    for name in ("linalg-on-tensors", "stablehlo", "tosa"):
        assert not any(op.startswith("torch.") for op in mlp_lowering.stage(name).ops), name


def test_op_histograms_count_what_the_text_holds(mlp_lowering):
    aten = mlp_lowering.stage("aten")
    assert aten.ops["aten.mm.default"] == 2 and aten.ops["aten.relu.default"] == 1
    linalg = mlp_lowering.stage("linalg-on-tensors")
    assert linalg.ops["linalg.matmul"] == 2
    assert linalg.text.count("linalg.matmul") == 2
    assert mlp_lowering.stage("stablehlo").ops["stablehlo.dot_general"] == 2


def test_a_dynamic_batch_is_a_question_mark_in_every_stage(mlp_lowering):
    assert mlp_lowering.stage("aten").inputs == ("tensor<?x4xf32>",)
    assert mlp_lowering.stage("torch").inputs == ("!torch.vtensor<[?,4],f32>",)
    for name in ("linalg-on-tensors", "stablehlo", "tosa"):
        assert mlp_lowering.stage(name).inputs == ("tensor<?x4xf32>",)
        assert mlp_lowering.stage(name).outputs == ("tensor<?x3xf32>",)


def test_static_shapes_stay_numbers():
    low = lowering(nn.Linear(4, 3), torch.randn(5, 4), stages=("linalg-on-tensors",))
    assert low.stage("linalg-on-tensors").inputs == ("tensor<5x4xf32>",)
    assert low.stage("aten").outputs == ("tensor<5x3xf32>",)


def test_text_and_html_are_deterministic_and_escaped(mlp_lowering):
    model, (x,) = zoo.example("mlp")
    again = lowering(model, x, dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    assert again.to_text(width=200) == mlp_lowering.to_text(width=200)
    assert again.to_html() == mlp_lowering.to_html()
    html = mlp_lowering.to_html()
    assert "!torch.vtensor&lt;[?,4],f32&gt;" in html and "<torch" not in html
    assert str(mlp_lowering) == mlp_lowering.to_text()
    assert repr(mlp_lowering) == "<Lowering: aten -> torch -> linalg-on-tensors -> stablehlo -> tosa>"


class _Erfinv(nn.Module):
    def forward(self, x):
        return torch.erfinv(x) * 2


class _Median(nn.Module):
    def forward(self, x):
        return x.median(0).values


def test_a_failing_stage_names_the_stage_and_the_blocking_op(capfd):
    with pytest.raises(FxCourseError) as info:
        lowering(_Erfinv(), torch.rand(3), stages=("torch", "linalg-on-tensors"))
    text = str(info.value)
    assert text.startswith("lowering, stage linalg-on-tensors:")
    assert "blocked by torch.aten.erfinv" in text and "卡在 torch.aten.erfinv" in text
    assert "loc(" not in text  # no source locations (machine paths)
    assert "failed to legalize" not in capfd.readouterr().err  # diagnostics kept, not printed


def test_an_op_torch_mlir_does_not_know_blocks_the_torch_stage():
    with pytest.raises(FxCourseError, match=r"stage torch: .*blocked by torch\.aten\.median\.dim"):
        lowering(_Median(), torch.rand(4, 4), stages=("torch",))


def test_an_export_failure_is_the_export_stage_with_a_fix():
    with pytest.raises(FxCourseError) as info:
        lowering(zoo.Gate(), torch.randn(2, 4))
    assert str(info.value).startswith("lowering, stage export:")
    assert "torch.cond" in str(info.value) and "draft_export" in str(info.value)


def test_an_exported_program_is_lowered_as_it_is():
    model, (x,) = zoo.example("mlp")
    ep = torch.export.export(model, (x,))
    low = lowering(ep, stages=("stablehlo",))
    assert low.stage("stablehlo").inputs == ("tensor<2x4xf32>",)


@pytest.mark.parametrize("stages", [("linalg",), "torch", ()])
def test_unknown_stages_are_refused_with_the_names_accepted(stages):
    with pytest.raises(FxCourseError, match="linalg-on-tensors"):
        lowering(nn.ReLU(), torch.randn(2), stages=stages)


def test_a_plain_function_and_an_unknown_stage_name_are_refused():
    with pytest.raises(FxCourseError, match="nn.Module or a torch.export.ExportedProgram"):
        lowering(torch.relu, torch.randn(2))
    low = lowering(nn.ReLU(), torch.randn(2), stages=("torch",))
    with pytest.raises(FxCourseError, match="one of \\['aten', 'torch'\\]"):
        low.stage("tosa")


def test_the_lowering_stack_stays_out_of_import_fxcourse():
    code = ("import sys, fxcourse; fxcourse.lowering; print([m for m in ('torch_mlir', 'iree', 'iree.compiler', "
            "'iree.runtime') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert "lowering" in fxcourse.__all__ and "Lowering" in fxcourse.__all__


def test_doctor_reports_an_import_failure_with_the_fix(tmp_path):
    fake = tmp_path / "python"
    reply = {"lowering_import_errors": {"iree-base-runtime": "ModuleNotFoundError: No module named 'ml_dtypes'"}}
    fake.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(reply))})\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    findings = {f.name: f for f in lowering_findings(python=str(fake))}
    bad = findings["iree-base-runtime"]
    assert not bad.ok and "import failed: ModuleNotFoundError" in bad.en and "导入失败" in bad.zh
    fix = bad.fix if isinstance(bad.fix, str) else " ".join(bad.fix)  # a str, or an (en, zh) pair
    assert "iree-base-runtime==3.13.0" in fix
    assert findings["torch-mlir"].ok and findings["iree-base-compiler"].ok


def test_doctor_finds_the_lowering_stack_here():
    assert all(f.ok for f in lowering_findings())
