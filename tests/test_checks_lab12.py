"""Lab 12 checkers: reference answers pass, another right answer passes, and the common
mistakes are rejected with their own messages."""
from __future__ import annotations

import copy
import os
import pickle
import pickletools
import zipfile

import pytest
import torch

from checking import expect_one_language, expect_passed, expect_wrong, solution
from fxcourse import check, hint


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


# -- lab12.1: save weights that load with weights_only=True ----------------------------------

def test_lab12_1_reference_passes():
    expect_passed("lab12.1", solution("lab12", "save_and_reload"))


def test_lab12_1_another_right_answer_passes():
    def copy_of_tensors(model, make_model, folder):
        path = os.path.join(folder, "state.bin")
        torch.save({k: v.clone() for k, v in model.state_dict().items()}, path)
        fresh = make_model()
        fresh.train(False)
        fresh.load_state_dict(torch.load(path))
        return fresh

    expect_passed("lab12.1", copy_of_tensors)


def test_lab12_1_stub_is_not_implemented():
    assert check("lab12.1", _stub).status == "not_implemented"


def test_lab12_1_whole_module_pickled():
    def whole_module(model, make_model, folder):
        path = os.path.join(folder, "model.pt")
        torch.save(model, path)
        fresh = make_model()
        fresh.load_state_dict(model.state_dict())
        return fresh.eval()

    result = expect_wrong("lab12.1", whole_module)
    assert "weights-only loader" in result.en and "仅权重加载器" in result.zh


def test_lab12_1_parameters_only_loses_buffers():
    def parameters_only(model, make_model, folder):
        path = os.path.join(folder, "params.pt")
        torch.save({k: v.detach() for k, v in model.named_parameters()}, path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path), strict=False)
        return fresh.eval()

    result = expect_wrong("lab12.1", parameters_only)
    assert "buffers" in result.en and "缓冲区" in result.zh


def test_lab12_1_left_in_training_mode():
    def no_eval(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh

    result = expect_wrong("lab12.1", no_eval)
    assert "training mode" in result.en and "训练模式" in result.zh


def test_lab12_1_returns_a_deep_copy():
    def deep_copy(model, make_model, folder):
        torch.save(model.state_dict(), os.path.join(folder, "weights.pt"))
        return copy.deepcopy(model).eval()

    result = expect_wrong("lab12.1", deep_copy)
    assert "make_model()" in result.en and "make_model()" in result.zh


def test_lab12_1_returns_the_original():
    def original(model, make_model, folder):
        torch.save(model.state_dict(), os.path.join(folder, "weights.pt"))
        return model

    result = expect_wrong("lab12.1", original)
    assert "returned the model it was given" in result.en and "传入的那个模型" in result.zh


def test_lab12_1_writes_nothing():
    def nothing_written(model, make_model, folder):
        fresh = make_model()
        fresh.load_state_dict(model.state_dict())
        return fresh.eval()

    result = expect_wrong("lab12.1", nothing_written)
    assert "Nothing was written" in result.en and "没有写入" in result.zh


# -- lab12.2: export with a dynamic batch, save, load ------------------------------------------

def test_lab12_2_reference_passes():
    expect_passed("lab12.2", solution("lab12", "export_and_save"))


def test_lab12_2_another_right_answer_passes():
    def automatic(model, example, path):
        program = torch.export.export(model, (example,), dynamic_shapes=({0: torch.export.Dim.AUTO},))
        with open(path, "wb") as fh:
            torch.export.save(program, fh)

    expect_passed("lab12.2", automatic)


def test_lab12_2_static_batch():
    def static(model, example, path):
        torch.export.save(torch.export.export(model, (example,)), path)

    result = expect_wrong("lab12.2", static)
    assert "fixed to the example's" in result.en and "固定成了示例的大小" in result.zh


def test_lab12_2_batch_range_too_small():
    def at_most_sixteen(model, example, path):
        batch = torch.export.Dim("batch", max=16)
        torch.export.save(torch.export.export(model, (example,), dynamic_shapes=({0: batch},)), path)

    result = expect_wrong("lab12.2", at_most_sixteen)
    assert "batch 33" in result.en and "取值范围不包括" in result.zh


def test_lab12_2_torch_save_of_the_program():
    def pickled_program(model, example, path):
        batch = torch.export.Dim("batch")
        torch.save(torch.export.export(model, (example,), dynamic_shapes=({0: batch},)), path)

    result = expect_wrong("lab12.2", pickled_program)
    assert "torch.export.load cannot read" in result.en and "无法读取" in result.zh


def test_lab12_2_state_dict_saved():
    def state_dict_only(model, example, path):
        torch.save(model.state_dict(), path)

    result = expect_wrong("lab12.2", state_dict_only)
    assert "torch.export.load cannot read" in result.en and "torch.save file" in result.en


# -- lab12.3: spot the unsafe files ------------------------------------------------------------

_SAFE_PREFIXES = ("torch._utils._rebuild", "collections.OrderedDict", "torch.FloatStorage",
                  "torch.storage", "torch._tensor._rebuild")


def _pickle_bytes(path):
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            (name,) = [n for n in archive.namelist() if n.endswith("data.pkl")]
            return archive.read(name)
    with open(path, "rb") as fh:
        return fh.read()


def _globals_in(data):
    names, pushed, memo = [], [], {}
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            pushed.append(arg)
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            pushed.append(memo.get(arg))
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT"):
            memo[arg] = pushed[-1] if pushed else None
        elif op.name == "MEMOIZE":
            memo[len(memo)] = pushed[-1] if pushed else None
        elif op.name == "GLOBAL":
            names.append(arg.replace(" ", "."))
        elif op.name == "STACK_GLOBAL":
            names.append(f"{pushed[-2]}.{pushed[-1]}")
        else:
            pushed.append(None)
    return names


def test_lab12_3_reference_passes():
    expect_passed("lab12.3", solution("lab12", "is_unsafe"))


def test_lab12_3_pickletools_answer_passes():
    def by_opcodes(path):
        return any(not name.startswith(_SAFE_PREFIXES) for name in _globals_in(_pickle_bytes(path)))

    expect_passed("lab12.3", by_opcodes)


def test_lab12_3_full_load_runs_the_payload():
    def full_load(path):
        try:
            obj = torch.load(path, weights_only=False)
        except Exception:
            with open(path, "rb") as fh:
                obj = pickle.load(fh)
        return not isinstance(obj, (dict, torch.Tensor))

    result = expect_wrong("lab12.3", full_load)
    assert "ran the payload" in result.en and "运行了其中的载荷" in result.zh


def test_lab12_3_by_extension():
    def by_extension(path):
        return path.endswith(".bin")

    result = expect_wrong("lab12.3", by_extension)
    assert "extension" in result.en and "扩展名" in result.zh


def test_lab12_3_everything_unsafe():
    def everything(path):
        return True

    result = expect_wrong("lab12.3", everything)
    assert "every file unsafe" in result.en and "所有文件都判为不安全" in result.zh


def test_lab12_3_only_raw_pickles_unsafe():
    def raw_only(path):
        return not zipfile.is_zipfile(path)

    result = expect_wrong("lab12.3", raw_only)
    assert "judged wrongly" in result.en and "判断错了" in result.zh


def test_lab12_3_not_a_bool():
    def says_yes(path):
        return "yes"

    result = expect_wrong("lab12.3", says_yes)
    assert "True or False" in result.en and "True 或 False" in result.zh


def test_lab12_hints_are_ladders():
    for task_id in ("lab12.1", "lab12.2", "lab12.3"):
        first, second = hint(task_id, 1), hint(task_id, 2)
        assert first.en != second.en and "12_saving_compiled" in second.en


# -- one language at a time ----------------------------------------------------------------------



def _whole_module(model, make_model, folder):
    torch.save(model, os.path.join(folder, "model.pt"))
    fresh = make_model()
    fresh.load_state_dict(model.state_dict())
    return fresh.eval()


def _static_batch(model, example, path):
    torch.export.save(torch.export.export(model, (example,)), path)


@pytest.mark.parametrize("task_id, answer", [
    ("lab12.1", _whole_module),
    ("lab12.2", _static_batch),
    ("lab12.3", lambda path: True),
], ids=["lab12.1", "lab12.2", "lab12.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)
