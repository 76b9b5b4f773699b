"""Lab 12 checkers: reference answers pass, another right answer passes, and the common
mistakes are rejected with their own messages."""
from __future__ import annotations

import contextlib
import copy
import inspect
import io
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


@pytest.mark.parametrize("task_id", ["lab12.1", "lab12.2", "lab12.3"])
def test_lab12_stub_is_not_implemented(task_id):
    assert check(task_id, _stub).status == "not_implemented"


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


def test_lab12_1_keeps_buffers_and_parameters_as_tensors_passes():
    def parameters_and_buffers(model, make_model, folder):
        path = os.path.join(folder, "tensors.pt")
        tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        torch.save({k: v.detach() for k, v in tensors.items()}, path, _use_new_zipfile_serialization=False)
        fresh = make_model()
        fresh.eval()
        fresh.load_state_dict(torch.load(path, weights_only=True, map_location="cpu"))
        return fresh

    expect_passed("lab12.1", parameters_and_buffers)


def test_lab12_1_saved_in_double_precision_passes():
    def in_double(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save({k: v.double() if v.is_floating_point() else v for k, v in model.state_dict().items()}, path)
        fresh = make_model().eval()
        fresh.load_state_dict(torch.load(path))
        return fresh

    expect_passed("lab12.1", in_double)


def test_lab12_1_switches_the_given_model_to_eval():
    def eval_first(model, make_model, folder):
        model.eval()
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", eval_first)
    assert "out of training mode" in result.en and "切出了训练模式" in result.zh
    assert "training == True" in result.expected


def test_lab12_1_eval_then_train_again_changes_a_submodule():
    def eval_and_back(model, make_model, folder):
        was_training = model.training
        model.eval()
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        model.train(was_training)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", eval_and_back)
    assert "changed the model it was given" in result.en and "修改了传入的模型" in result.zh
    assert "drop.training == False" in result.expected


def test_lab12_1_freezes_the_given_model():
    def frozen(model, make_model, folder):
        model.requires_grad_(False)
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", frozen)
    assert "requires_grad or the dtype" in result.en and "requires_grad 或 dtype" in result.zh
    assert "conv.weight.requires_grad == True" in result.expected


def test_lab12_1_casts_the_given_model():
    def in_double(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.double().state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", in_double)
    assert "requires_grad or the dtype" in result.en and "requires_grad 或 dtype" in result.zh
    assert "torch.float32" in result.expected and "torch.float64" in result.got


def test_lab12_1_highest_pickle_protocol():
    def newest_protocol(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path, pickle_protocol=pickle.HIGHEST_PROTOCOL)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path, weights_only=False))
        return fresh.eval()

    result = expect_wrong("lab12.1", newest_protocol)
    assert f"pickle protocol {pickle.HIGHEST_PROTOCOL}," in result.en and "default protocol, 2" in result.en
    assert f"pickle 协议 {pickle.HIGHEST_PROTOCOL} 保存" in result.zh and "默认协议 2" in result.zh


def test_lab12_1_older_format_with_protocol_4():
    def legacy_newer_protocol(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path, pickle_protocol=4, _use_new_zipfile_serialization=False)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path, weights_only=False))
        return fresh.eval()

    result = expect_wrong("lab12.1", legacy_newer_protocol)
    assert "pickle protocol 4," in result.en and "pickle 协议 4 保存" in result.zh


def test_lab12_1_written_with_pickle_dump():
    def pickled(model, make_model, folder):
        path = os.path.join(folder, "weights.pkl")
        with open(path, "wb") as fh:
            pickle.dump(model.state_dict(), fh)
        fresh = make_model()
        with open(path, "rb") as fh:
            fresh.load_state_dict(pickle.load(fh))
        return fresh.eval()

    result = expect_wrong("lab12.1", pickled)
    assert "written with pickle, not torch.save" in result.en and "是用 pickle 而不是 torch.save 写出的" in result.zh


def test_lab12_1_numpy_archive():
    import numpy as np

    def npz(model, make_model, folder):
        path = os.path.join(folder, "weights.npz")
        np.savez(path, **{k: v.numpy() for k, v in model.state_dict().items()})
        fresh = make_model()
        arrays = np.load(path)
        fresh.load_state_dict({k: torch.from_numpy(arrays[k]) for k in arrays.files})
        return fresh.eval()

    result = expect_wrong("lab12.1", npz)
    assert "is no torch.save file" in result.en and "不是 torch.save 写出的文件" in result.zh


def test_lab12_1_returned_model_cast_to_float32():
    def cast_back(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.float().eval()

    result = expect_wrong("lab12.1", cast_back)
    assert "without casting" in result.en and "不要转换" in result.zh
    assert "torch.float64" in result.expected and "torch.float32" in result.got


def test_lab12_1_extra_file_in_the_folder():
    def with_a_note(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        with open(os.path.join(folder, "README"), "w") as fh:
            fh.write("weights of the model")
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", with_a_note)
    assert "wrote 2 files" in result.en and "写了 2 个文件" in result.zh


def test_lab12_1_state_kept_in_a_global():
    kept = {}

    def on_the_side(model, make_model, folder):
        kept["state"] = {k: v.clone() for k, v in model.state_dict().items()}
        torch.save({}, os.path.join(folder, "weights.pt"))
        fresh = make_model()
        fresh.load_state_dict(kept["state"])
        return fresh.eval()

    result = expect_wrong("lab12.1", on_the_side)
    assert "the file does not" in result.en and "文件里没有" in result.zh


def test_lab12_1_saves_into_a_sub_folder():
    def nested_folder(model, make_model, folder):
        os.makedirs(os.path.join(folder, "checkpoints"))
        path = os.path.join(folder, "checkpoints", "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", nested_folder)
    assert "is a folder" in result.en and "是一个文件夹" in result.zh


def test_lab12_1_returns_the_compiled_model():
    def compiled(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return torch.compile(fresh.eval())

    result = expect_wrong("lab12.1", compiled)
    assert "wrapped by torch.compile" in result.en and "被 torch.compile 包装" in result.zh
    assert "OptimizedModule" in result.got


def test_lab12_1_returns_the_model_inside_a_sequential():
    def wrapped(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return torch.nn.Sequential(fresh).eval()

    result = expect_wrong("lab12.1", wrapped)
    assert "wraps the new model in another module" in result.en and "包在了另一个模块里" in result.zh


def test_lab12_2_exported_with_keyword_arguments():
    def by_keyword(model, example_args, path):
        names = list(inspect.signature(model.forward).parameters)
        batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=model.pos.shape[0])
        program = torch.export.export(model, (), kwargs=dict(zip(names, example_args)),
                                      dynamic_shapes={n: {0: batch, 1: length} for n in names})
        torch.export.save(program, path)

    result = expect_wrong("lab12.2", by_keyword)
    assert "keyword arguments" in result.en and "positionally" in result.en and "args, not kwargs" in result.en
    assert "关键字参数" in result.zh and "按位置" in result.zh


def test_lab12_2_mask_given_as_a_keyword_argument():
    def mask_by_keyword(model, example_args, path):
        names = list(inspect.signature(model.forward).parameters)
        batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=model.pos.shape[0])
        program = torch.export.export(model, (example_args[0],), kwargs={names[1]: example_args[1]},
                                      dynamic_shapes={n: {0: batch, 1: length} for n in names})
        torch.export.save(program, path)

    result = expect_wrong("lab12.2", mask_by_keyword)
    assert "mask as keyword argument," in result.en and "takes it only so" in result.en
    assert "mask 是作为关键字参数传入的" in result.zh


def test_lab12_2_trains_the_given_model():
    def in_training(model, example_args, path):
        model.train()
        auto = {0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(auto, auto)), path)

    result = expect_wrong("lab12.2", in_training)
    assert "switched the mode" in result.en and "切换了模型" in result.zh


def test_lab12_1_buffers_copied_from_the_model_not_the_file():
    def buffers_on_the_side(model, make_model, folder):
        path = os.path.join(folder, "params.pt")
        torch.save({k: v.detach() for k, v in model.named_parameters()}, path)
        fresh = make_model()
        fresh.load_state_dict({**torch.load(path), **dict(model.named_buffers())})
        return fresh.eval()

    result = expect_wrong("lab12.1", buffers_on_the_side)
    assert "the file does not" in result.en and "文件里没有" in result.zh
    assert "norm.running_mean" in result.en


def test_lab12_1_nested_checkpoint_loaded_loosely():
    def nested(model, make_model, folder):
        path = os.path.join(folder, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "epoch": 3}, path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path), strict=False)
        return fresh.eval()

    result = expect_wrong("lab12.1", nested)
    assert "do not hold the saved values" in result.en and "与保存时不同" in result.zh


def test_lab12_1_loads_from_the_given_model_with_assign():
    def assigned(model, make_model, folder):
        torch.save(model.state_dict(), os.path.join(folder, "weights.pt"))
        fresh = make_model()
        fresh.load_state_dict(model.state_dict(), assign=True)
        return fresh.eval()

    result = expect_wrong("lab12.1", assigned)
    assert "never opened the saved file" in result.en and "从未打开保存的文件" in result.zh


def test_lab12_1_copies_from_the_given_model_not_the_file():
    def copied(model, make_model, folder):
        torch.save(model.state_dict(), os.path.join(folder, "weights.pt"))
        fresh = make_model()
        fresh.load_state_dict(model.state_dict())
        return fresh.eval()

    result = expect_wrong("lab12.1", copied)
    assert "never opened the saved file" in result.en and "从未打开保存的文件" in result.zh


def test_lab12_1_reads_the_file_but_shares_the_given_tensors():
    def shared(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        loaded = torch.load(path)
        fresh.load_state_dict({k: model.state_dict()[k] for k in loaded}, assign=True)
        return fresh.eval()

    result = expect_wrong("lab12.1", shared)
    assert "shares its tensors" in result.en and "共用张量" in result.zh


def test_lab12_1_saved_in_single_precision():
    def as_float(model, make_model, folder):
        path = os.path.join(folder, "weights.pt")
        torch.save({k: v.float() if v.is_floating_point() else v for k, v in model.state_dict().items()}, path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", as_float)
    assert "bit for bit" in result.en and "逐位还原" in result.zh
    assert "torch.float64" in result.expected[0] and "torch.float32" in result.got[0]


def test_lab12_1_moves_the_given_model_to_float32():
    def to_float32(model, make_model, folder):
        model.to("cpu", torch.float32)
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", to_float32)
    assert "requires_grad or the dtype" in result.en and "requires_grad 或 dtype" in result.zh
    assert "torch.float64" in result.expected and "torch.float32" in result.got


def test_lab12_1_parameters_and_buffers_in_two_files():
    def two_files(model, make_model, folder):
        names = {k for k, _ in model.named_buffers()}
        state = model.state_dict()
        for part, keep in (("params.pt", False), ("buffers.pt", True)):
            torch.save({k: v for k, v in state.items() if (k in names) == keep}, os.path.join(folder, part))
        fresh = make_model()
        fresh.load_state_dict({**torch.load(os.path.join(folder, "params.pt")),
                               **torch.load(os.path.join(folder, "buffers.pt"))})
        return fresh.eval()

    result = expect_wrong("lab12.1", two_files)
    assert "wrote 2 files" in result.en and "2 个文件" in result.zh


def test_lab12_1_clears_the_given_gradients():
    def zero_grad_first(model, make_model, folder):
        model.zero_grad(set_to_none=True)
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", zero_grad_first)
    assert "gradients" in result.en and "梯度" in result.zh and "None" in result.got


def test_lab12_1_zeroes_the_given_gradients():
    def zeroed(model, make_model, folder):
        model.zero_grad(set_to_none=False)
        path = os.path.join(folder, "weights.pt")
        torch.save(model.state_dict(), path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path))
        return fresh.eval()

    result = expect_wrong("lab12.1", zeroed)
    assert "gradients" in result.en and "梯度" in result.zh and "changed tensor" in result.got


def test_lab12_1_nested_checkpoint_with_kept_variables_passes():
    def nested(model, make_model, folder):
        path = os.path.join(folder, "ckpt")
        torch.save({"sd": model.state_dict(keep_vars=True), "meta": {"v": 1}}, path)
        fresh = make_model()
        fresh.load_state_dict(torch.load(path)["sd"], assign=True)
        fresh.train(False)
        return fresh

    expect_passed("lab12.1", nested)


def test_lab12_1_older_format_through_memory_passes():
    def through_bytes(model, make_model, folder):
        buffer = io.BytesIO()
        torch.save(model.state_dict(), buffer, _use_new_zipfile_serialization=False)
        path = os.path.join(folder, "x.bin")
        with open(path, "wb") as fh:
            fh.write(buffer.getvalue())
        fresh = make_model()
        fresh.load_state_dict(torch.load(path, weights_only=True, mmap=False))
        return fresh.eval()

    expect_passed("lab12.1", through_bytes)


def test_lab12_1_values_in_order_mapped_passes():
    def values_in_order(model, make_model, folder):
        path = os.path.join(folder, "values.pt")
        torch.save([v.clone() for v in model.state_dict().values()], path)
        fresh = make_model()
        keys = list(fresh.state_dict())
        fresh.load_state_dict(dict(zip(keys, torch.load(path, weights_only=True, mmap=True))))
        for module in fresh.modules():
            module.training = False
        return fresh

    expect_passed("lab12.1", values_in_order)


# -- lab12.2: two inputs, a dynamic batch and length, save, load ----------------------------------

def test_lab12_2_reference_passes():
    expect_passed("lab12.2", solution("lab12", "export_and_save"))


def test_lab12_2_automatic_dims_pass():
    def automatic(model, example_args, path):
        auto = {0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO}
        program = torch.export.export(model, example_args, dynamic_shapes=[auto, auto])
        with open(path, "wb") as fh:
            torch.export.save(program, fh)

    expect_passed("lab12.2", automatic)


def test_lab12_2_dims_by_argument_name_pass():
    def by_name(model, example_args, path):
        names = list(inspect.signature(model.forward).parameters)
        batch = torch.export.Dim("batch", min=1)
        length = torch.export.Dim("length", min=1, max=len(model.pos))
        shapes = {name: {0: batch, 1: length} for name in names}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=shapes), path)

    expect_passed("lab12.2", by_name)


def test_lab12_2_static_batch():
    def static(model, example_args, path):
        torch.export.save(torch.export.export(model, tuple(example_args)), path)

    result = expect_wrong("lab12.2", static)
    assert "batch 1" in result.en and "batch was fixed to the example's" in result.en
    assert "批大小被固定成了示例的大小" in result.zh and "batch" not in result.zh


def test_lab12_2_lecture_copy_fixes_the_length():
    def batch_only(model, example_args, path):
        batch = torch.export.Dim("batch")
        program = torch.export.export(model, tuple(example_args), dynamic_shapes=({0: batch}, {0: batch}))
        torch.export.save(program, path)

    result = expect_wrong("lab12.2", batch_only)
    assert "length 1" in result.en and "the batch is not the only one" in result.en
    assert "长度被固定成了示例的大小" in result.zh


def test_lab12_2_batch_range_too_small():
    def at_most_sixteen(model, example_args, path):
        batch = torch.export.Dim("batch", max=16)
        length = torch.export.Dim("length", max=model.pos.shape[0])
        dims = {0: batch, 1: length}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, dims)), path)

    result = expect_wrong("lab12.2", at_most_sixteen)
    assert "(33, 9, 4)" in result.en and "取值范围不包括" in result.zh


def test_lab12_2_length_one_short():
    def one_short(model, example_args, path):
        batch = torch.export.Dim("batch")
        length = torch.export.Dim("length", max=model.pos.shape[0] - 1)
        dims = {0: batch, 1: length}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, dims)), path)

    result = expect_wrong("lab12.2", one_short)
    assert "(4, 16)" in result.en and "leaves these sizes out" in result.en and "取值范围不包括" in result.zh


def test_lab12_2_length_bound_of_one_model_only():
    def sixteen_for_all(model, example_args, path):
        dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length", max=16)}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, dims)), path)

    result = expect_wrong("lab12.2", sixteen_for_all)
    assert "12 positions" in result.en and "12 个位置" in result.zh


def test_lab12_2_unbounded_length():
    def unbounded(model, example_args, path):
        dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length")}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, dims)), path)

    result = expect_wrong("lab12.2", unbounded)
    assert "16 positions" in result.en and "16 个位置" in result.zh


def test_lab12_2_a_dim_per_input():
    def separate(model, example_args, path):
        shapes = tuple({0: torch.export.Dim(f"batch{i}"), 1: torch.export.Dim(f"length{i}", max=len(model.pos))}
                       for i in range(2))
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=shapes), path)

    result = expect_wrong("lab12.2", separate)
    assert "one Dim object" in result.en and "同一个 Dim 对象" in result.zh


def test_lab12_2_keys_named_after_the_first_model():
    def named_x(model, example_args, path):
        dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length", max=len(model.pos))}
        program = torch.export.export(model, tuple(example_args), dynamic_shapes={"x": dims, "mask": dims})
        torch.export.save(program, path)

    result = expect_wrong("lab12.2", named_x)
    assert "names of forward's arguments" in result.en and "参数的名字" in result.zh


def test_lab12_2_only_the_first_input_dynamic():
    def first_only(model, example_args, path):
        dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("length", max=len(model.pos))}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, None)), path)

    result = expect_wrong("lab12.2", first_only)
    assert "in both inputs" in result.en and "两个输入上都标记" in result.zh


def test_lab12_2_features_marked_dynamic():
    def every_dimension(model, example_args, path):
        batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=len(model.pos))
        shapes = ({0: batch, 1: length, 2: torch.export.Dim("features")}, {0: batch, 1: length})
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=shapes), path)

    result = expect_wrong("lab12.2", every_dimension)
    assert "fixed by the model's linear layer" in result.en and "线性层固定" in result.zh


def test_lab12_2_batch_capped_at_4096():
    def capped(model, example_args, path):
        dims = {0: torch.export.Dim("batch", max=4096), 1: torch.export.Dim("length", max=model.pos.shape[0])}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, dims)), path)

    result = expect_wrong("lab12.2", capped)
    assert "leaves these sizes out" in result.en and "取值范围不包括" in result.zh and "(100003, 1, 4)" in result.en


def test_lab12_2_batch_capped_above_every_probe():
    def capped(model, example_args, path):
        dims = {0: torch.export.Dim("batch", max=10**7), 1: torch.export.Dim("length", max=model.pos.shape[0])}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=(dims, dims)), path)

    result = expect_wrong("lab12.2", capped)
    assert "at most 10000000" in result.en and "不超过 10000000 的批大小" in result.zh and "batch" not in result.zh


def test_lab12_2_names_from_the_signature_strict_passes():
    def strict_names(model, example_args, path):
        names = list(inspect.signature(model.forward).parameters)[:2]
        batch = torch.export.Dim("batch", min=1)
        length = torch.export.Dim("length", min=1, max=model.pos.size(0))
        shapes = {names[0]: [batch, length, None], names[1]: [batch, length]}
        torch.export.save(torch.export.export(model, tuple(example_args), dynamic_shapes=shapes, strict=True), path)

    expect_passed("lab12.2", strict_names)


def test_lab12_2_dynamic_dims_through_memory_passes():
    def through_bytes(model, example_args, path):
        dims = (torch.export.Dim.DYNAMIC, torch.export.Dim.DYNAMIC)
        program = torch.export.export(model, tuple(example_args), dynamic_shapes=(dims + (None,), dims))
        buffer = io.BytesIO()
        torch.export.save(program, buffer)
        with open(path, "wb") as fh:
            fh.write(buffer.getvalue())

    expect_passed("lab12.2", through_bytes)


def test_lab12_2_torch_save_of_the_program():
    def pickled_program(model, example_args, path):
        torch.save(torch.export.export(model, tuple(example_args), dynamic_shapes=({0: torch.export.Dim.AUTO,
                                                                                   1: torch.export.Dim.AUTO},) * 2),
                   path)

    result = expect_wrong("lab12.2", pickled_program)
    assert "torch.export.load cannot read" in result.en and "无法读取" in result.zh


def test_lab12_2_state_dict_saved():
    def state_dict_only(model, example_args, path):
        torch.save(model.state_dict(), path)

    result = expect_wrong("lab12.2", state_dict_only)
    assert "torch.export.load cannot read" in result.en and "torch.save file" in result.en


# -- lab12.3: spot the unsafe files ------------------------------------------------------------

def _globals_in(data):
    """The lecture's imports_of: the names a pickle imports, read without running it."""
    names, pushed, memo = [], [], {}
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
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


def _data_pkl(path):
    """The pickle inside a torch.save archive, or None for any other file."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl")]
        if len(pickles) != 1 or not any(n.endswith("/version") for n in names):
            return None
        return archive.read(pickles[0])


def _lecture_allow_list(path):
    """What a torch.save of the lecture's state_dict imports: its allow-list, nothing more."""
    data = _data_pkl(path)
    if data is None:
        return True
    return any(name not in ("collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch.FloatStorage")
               for name in _globals_in(data))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.filterwarnings("ignore:Validating sparse tensor invariants")
def test_lab12_3_kinds_agree_with_the_weights_only_loader(tmp_path):
    from fxcourse.checks import lab12

    for round_ in range(2):
        folder = tmp_path / str(round_)
        folder.mkdir()
        kinds = lab12._build_files(str(folder), round_)
        assert set(kinds.values()) == set(lab12._KINDS)
        for name, kind in kinds.items():
            try:
                torch.load(folder / name, weights_only=True)
                refused = False
            except Exception:
                refused = True
            assert refused == lab12._unsafe(kind), (name, kind)
        assert not lab12._TRIPPED


def test_lab12_3_reference_passes():
    expect_passed("lab12.3", solution("lab12", "is_unsafe"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_lab12_3_reference_on_files_a_learner_makes(tmp_path):
    is_unsafe = solution("lab12", "is_unsafe")
    made = {
        "int.pkl": (lambda p: pickle.dump(3, open(p, "wb")), True),
        "int_p2.pkl": (lambda p: pickle.dump(3, open(p, "wb"), protocol=2), True),
        "dict.pkl": (lambda p: pickle.dump({"step": 7}, open(p, "wb")), True),
        "list_p2.pkl": (lambda p: pickle.dump([1, 2.5], open(p, "wb"), protocol=2), True),
        "int64.pt": (lambda p: torch.save(torch.arange(4), p), False),
        "float64.pt": (lambda p: torch.save(torch.ones(2, dtype=torch.float64), p), False),
        "batch_norm.pt": (lambda p: torch.save(torch.nn.BatchNorm2d(3).state_dict(), p), False),
        "module.pt": (lambda p: torch.save(torch.nn.Linear(2, 2), p), True),
        "zeros_call.pt": (lambda p: torch.save({"z": _Call(torch.zeros, (2,))}, p), True),
        "size_call.pt": (lambda p: torch.save({"z": _Call(torch.Size, ((2,),))}, p), False),
        "legacy.pt": (lambda p: torch.save({"w": torch.ones(2)}, p, _use_new_zipfile_serialization=False), False),
        "empty.pt": (lambda p: open(p, "wb").close(), True),
        "text.pt": (lambda p: open(p, "w").write("step = 7"), True),
        "other.zip": (lambda p: zipfile.ZipFile(p, "w").writestr("a/b.txt", "hi"), True),
    }
    for name, (write, unsafe) in made.items():
        write(str(tmp_path / name))
        assert is_unsafe(str(tmp_path / name)) is unsafe, name


class _Call:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def test_lab12_3_public_scanner_misses_a_broken_archive():
    def by_public_scan(path):
        try:
            return bool(torch.serialization.get_unsafe_globals_in_checkpoint(path))
        except Exception:  # not a torch.save archive
            return True

    result = expect_wrong("lab12.3", by_public_scan)
    assert "missing from the archive or cut short" in result.en and "数据记录缺失或被截短" in result.zh
    assert "data record missing" in result.tried[0] and "数据记录" in result.tried[1]


def test_lab12_3_pickletools_answer_misses_the_protocol():
    def by_opcodes(path):
        data = _data_pkl(path)
        if data is None:
            return True
        try:
            names = _globals_in(data)
        except Exception:
            return True
        allowed = set(torch._weights_only_unpickler._get_allowed_globals())
        # protocol 2 names Python's builtins by their Python 2 module, as the loader knows
        return any(name.replace("__builtin__.", "builtins.") not in allowed for name in names)

    result = expect_wrong("lab12.3", by_opcodes)
    assert "pickle_protocol=4" in result.en and "pickle_protocol=4" in result.zh and "协议 4" in result.zh


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
    assert "names a class or function" in result.en and "指定了要导入并调用的类或函数" in result.zh


def test_lab12_3_not_a_bool():
    def says_yes(path):
        return "yes"

    result = expect_wrong("lab12.3", says_yes)
    assert "True or False" in result.en and "True 或 False" in result.zh


def test_lab12_3_only_refusals_caught():
    def refusals(path):
        try:
            torch.load(path, weights_only=True)
        except pickle.UnpicklingError:
            return True
        return False

    result = expect_wrong("lab12.3", refusals)
    assert "raised on" in result.en and "抛出了异常" in result.zh
    assert "pickle.dump of the int 3" in result.tried[0] and "整数 3" in result.tried[1]
    assert "Invalid magic number" in result.got


def test_lab12_3_refusals_and_runtime_errors_caught():
    def two_kinds(path):
        try:
            torch.load(path, weights_only=True)
        except (pickle.UnpicklingError, RuntimeError):
            return True
        return False

    result = expect_wrong("lab12.3", two_kinds)
    assert "raised on" in result.en and "an empty file" in result.tried[0] and "EOFError" in result.got


def test_lab12_3_unreadable_files_called_safe():
    def unknown_is_fine(path):
        try:
            torch.load(path, weights_only=True)
        except pickle.UnpicklingError:
            return True
        except Exception:
            return False
        return False

    result = expect_wrong("lab12.3", unknown_is_fine)
    assert "pickle.dump file safe" in result.en and "pickle.dump 文件只包含普通数据" in result.zh


def test_lab12_3_plain_pickles_judged_by_their_imports():
    def imports_nothing_is_safe(path):
        data = _data_pkl(path)
        if data is not None:
            try:
                return bool(torch.serialization.get_unsafe_globals_in_checkpoint(path))
            except Exception:
                return True
        try:
            with open(path, "rb") as fh:
                return bool(_globals_in(fh.read()))
        except Exception:
            return True

    result = expect_wrong("lab12.3", imports_nothing_is_safe)
    assert "pickle.dump file safe" in result.en and "完整的反序列化器" in result.zh


def test_lab12_3_torch_functions_trusted():
    def torch_is_trusted(path):
        data = _data_pkl(path)
        if data is None:
            return True
        return any(not name.startswith(("torch.", "collections.", "__builtin__.", "_codecs."))
                   for name in _globals_in(data))

    result = expect_wrong("lab12.3", torch_is_trusted)
    assert "torch function" in result.en and "torch 函数" in result.zh


def test_lab12_3_allow_list_of_the_lecture():
    result = expect_wrong("lab12.3", _lecture_allow_list)
    assert "narrower than the loader's" in result.en and "比加载器的窄" in result.zh


def test_lab12_3_other_zips_called_safe():
    def zips_without_globals(path):
        if not zipfile.is_zipfile(path):
            return True
        try:
            return bool(torch.serialization.get_unsafe_globals_in_checkpoint(path))
        except Exception:  # no pickle in it: nothing to import
            return False

    result = expect_wrong("lab12.3", zips_without_globals)
    assert "no checkpoint at all" in result.en and "根本不是检查点" in result.zh


def test_lab12_3_widens_the_allow_list():
    def widened(path):
        torch.serialization.add_safe_globals([torch.nn.Linear, torch.nn.Module])
        try:
            torch.load(path, weights_only=True)
        except Exception:
            return True
        return False

    found = _allow_list_now()
    try:
        result = expect_wrong("lab12.3", widened)
        assert "widened the weights-only loader's allow-list" in result.en and "扩大了仅权重加载器的允许列表" in result.zh
        assert set(torch.serialization.get_safe_globals()) == found  # put back as it was found
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(list(found))


def test_lab12_3_widens_the_allow_list_inside_a_with_block():
    def inside(path):
        with torch.serialization.safe_globals([getattr]):
            try:
                torch.load(path, weights_only=True)
            except Exception:
                return True
        return False

    result = expect_wrong("lab12.3", inside)
    assert "widened" in result.en and "getattr" in result.en and "扩大了" in result.zh


def test_lab12_3_memory_mapped_loading():
    def mapped(path):
        try:
            torch.load(path, weights_only=True, mmap=True)
        except Exception:
            return True
        return False

    result = expect_wrong("lab12.3", mapped)
    assert "mmap=True" in result.en and "mmap=True" in result.zh


def test_lab12_3_only_zip_archives_loaded():
    def zips_only(path):
        if not zipfile.is_zipfile(path):  # "every torch.save file is a zip"
            return True
        try:
            torch.load(path, weights_only=True)
        except Exception:
            return True
        return False

    result = expect_wrong("lab12.3", zips_only)
    assert "older format" in result.en and "旧格式" in result.zh


def test_lab12_3_safe_globals_of_the_whole_list_empties_it():
    def same_list(path):
        with torch.serialization.safe_globals(torch.serialization.get_safe_globals()):  # removes them all on exit
            try:
                torch.load(path, weights_only=True)
            except Exception:
                return True
        return False

    found = _allow_list_now()
    try:
        result = expect_wrong("lab12.3", same_list)
        assert "narrower than it found it" in result.en and "ValueError" in result.en
        assert "比原来更窄" in result.zh and "safe_globals 上下文在退出时" in result.zh
        assert set(torch.serialization.get_safe_globals()) == found
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(list(found))


def test_lab12_3_allow_list_put_back_after_loading_passes():
    def put_back(path):
        saved = torch.serialization.get_safe_globals()
        try:
            torch.load(path, weights_only=True)
        except Exception:
            return True
        finally:
            torch.serialization.clear_safe_globals()
            torch.serialization.add_safe_globals(saved)
        return False

    expect_passed("lab12.3", put_back)


def _allow_list_now():
    """The allow-list as a check will find it: building a jagged nested tensor (as the checker does) imports
    torch._dynamo, which adds entries of its own the first time."""
    torch.nested.nested_tensor([torch.ones(1)], layout=torch.jagged)
    return set(torch.serialization.get_safe_globals())


def _load_verdict(path):
    try:
        torch.load(path, weights_only=True)
    except Exception:
        return True
    return False


def test_lab12_3_allow_list_cleared_and_left_empty():
    def cleared(path):
        torch.serialization.clear_safe_globals()
        return _load_verdict(path)

    found = _allow_list_now()
    try:
        result = expect_wrong("lab12.3", cleared)
        assert "narrowed allow-list" in result.en and "not empty to begin with" in result.en
        assert "允许列表被缩小" in result.zh and "一开始就不是空的" in result.zh
        assert set(torch.serialization.get_safe_globals()) == found  # put back as it was found
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(list(found))


def test_lab12_3_allow_list_cleared_then_restored():
    def cleared_for_the_load(path):
        saved = torch.serialization.get_safe_globals()
        torch.serialization.clear_safe_globals()
        try:
            return _load_verdict(path)
        finally:
            torch.serialization.add_safe_globals(saved)

    result = expect_wrong("lab12.3", cleared_for_the_load)
    assert "narrowed allow-list" in result.en and "ValueError" in result.en
    assert "允许列表被缩小" in result.zh and "ValueError" in result.zh


def test_lab12_3_check_runs_with_torchs_own_list_when_found_cleared():
    found = _allow_list_now()
    torch.serialization.clear_safe_globals()
    try:
        expect_passed("lab12.3", solution("lab12", "is_unsafe"))
        assert torch.serialization.get_safe_globals() == []  # put back as found: empty
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(list(found))


def test_lab12_3_warnings_turned_into_errors():
    import warnings

    def strict(path):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return _load_verdict(path)

    result = expect_wrong("lab12.3", strict)
    assert "a warning is not a refusal" in result.en and "警告并不是拒绝" in result.zh
    assert "sparse tensor" in result.tried[0] or "pickle_protocol=3" in result.tried[0]


def test_lab12_3_every_protocol_but_2_called_refused():
    def protocol_two_only(path):
        if zipfile.is_zipfile(path):
            data = _data_pkl(path)
            if data is not None and data[:1] == b"\x80" and data[1] != 2:
                return True
        return _load_verdict(path)

    result = expect_wrong("lab12.3", protocol_two_only)
    assert "A protocol-3 file of tensors and numbers is read" in result.en and "协议 3 文件是可以读取的" in result.zh


def test_lab12_3_scanner_without_torchs_own_entries():
    allowed = set(torch._weights_only_unpickler._get_allowed_globals())  # the fixed list only

    def fixed_list_only(path):
        data = _data_pkl(path)
        if data is None or data[1:2] >= b"\x04":
            return _load_verdict(path)
        try:
            names = _globals_in(data)
        except Exception:
            return True
        if any(name.replace("__builtin__.", "builtins.").replace("exceptions.", "builtins.") not in allowed
               for name in names):
            return True
        return _load_verdict(path)

    result = expect_wrong("lab12.3", fixed_list_only)
    assert "not empty to begin with" in result.en and "get_safe_globals()" in result.en
    assert "一开始就不是空的" in result.zh


def test_lab12_3_restricted_unpickler_judges_by_the_protocol_number():
    import _compat_pickle

    def restricted(path):
        from torch import _weights_only_unpickler as wu

        allowed = {**wu._get_allowed_globals(), **wu._get_user_allowed_globals()}
        if not zipfile.is_zipfile(path):
            return _load_verdict(path)  # the older format: let the loader judge
        try:
            with zipfile.ZipFile(path) as archive:
                pkl = [n for n in archive.namelist() if n.endswith("data.pkl")]
                if len(pkl) != 1:
                    return True
                prefix = pkl[0][: -len("data.pkl")]
                data = archive.read(pkl[0])
                if data[:1] == b"\x80" and data[1] >= 4:  # protocols 4 and 5: refused
                    return True

                class Restricted(pickle.Unpickler):  # the Python docs' "restricting globals"
                    def find_class(self, module, name):
                        if data[1:2] < b"\x03":  # Python 2 names, as pickle itself maps them
                            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
                            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
                        if f"{module}.{name}" in allowed:
                            return allowed[f"{module}.{name}"]
                        raise pickle.UnpicklingError(f"{module}.{name}")

                    def persistent_load(self, pid):
                        _, kind, key, _, numel = pid
                        dtype = kind if isinstance(kind, torch.dtype) else kind.dtype
                        raw = archive.read(prefix + "data/" + key)
                        if len(raw) < numel * dtype.itemsize:
                            raise ValueError("record cut short")
                        storage = torch.UntypedStorage.from_buffer(raw, dtype=torch.uint8) if raw else torch.UntypedStorage(0)
                        return torch.storage.TypedStorage(wrap_storage=storage, dtype=dtype, _internal=True)

                Restricted(io.BytesIO(data)).load()
        except Exception:
            return True
        return False

    result = expect_wrong("lab12.3", restricted)
    assert "pickle_protocol=1" in result.en and "INT instruction" in result.en and "protocol number alone" in result.en
    assert "pickle_protocol=1" in result.zh and "INT 指令" in result.zh and "只看协议号" in result.zh
    assert "SHORT_BINBYTES" not in result.en or "pickle_protocol=3" in result.tried[0]


def test_lab12_3_loading_without_the_data():
    def on_meta(path):
        try:
            torch.load(path, weights_only=True, map_location="meta")
        except Exception:
            return True
        return False

    result = expect_wrong("lab12.3", on_meta)
    assert "cut short" in result.en and "map_location='meta'" in result.en and "截短" in result.zh


def test_lab12_3_allow_list_set_directly():
    def set_directly(path):
        from torch import _weights_only_unpickler as unpickler

        unpickler._marked_safe_globals_set = set(unpickler._marked_safe_globals_set) | {getattr}
        try:
            torch.load(path, weights_only=True)
        except Exception:
            return True
        return False

    found = _allow_list_now()
    try:
        result = expect_wrong("lab12.3", set_directly)
        assert "widened" in result.en and "getattr" in result.en and "扩大了" in result.zh
        assert set(torch.serialization.get_safe_globals()) == found
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(list(found))


def test_lab12_3_scan_of_global_opcodes_only():
    allowed = set(torch._weights_only_unpickler._get_allowed_globals())

    def global_only(path):
        data = _data_pkl(path)
        if data is None:
            return True
        try:
            for op, arg, _ in pickletools.genops(data):
                if op.name == "GLOBAL":
                    name = arg.replace(" ", ".").replace("__builtin__.", "builtins.")
                    module, _, attr = name.rpartition(".")
                    if name not in allowed and not (module == "torch" and isinstance(getattr(torch, attr, None),
                                                                                     torch.dtype)):
                        return True
        except Exception:
            return True
        return False

    result = expect_wrong("lab12.3", global_only)
    assert "STACK_GLOBAL" in result.en and "STACK_GLOBAL" in result.zh


def test_lab12_3_builtins_trusted():
    def builtins_trusted(path):
        data = _data_pkl(path)
        if data is None:
            return True
        allowed = set(torch._weights_only_unpickler._get_allowed_globals())
        try:
            return any(not (name.startswith("__builtin__.") or name in allowed) for name in _globals_in(data))
        except Exception:
            return True

    result = expect_wrong("lab12.3", builtins_trusted)
    assert "Python builtin" in result.en and "Python 内置函数" in result.zh


def test_lab12_3_loading_from_memory_passes():
    def from_memory(path):
        try:
            with open(path, "rb") as fh:
                buffer = io.BytesIO(fh.read())
            torch.load(buffer, weights_only=True, map_location="cpu")
            return False
        except BaseException:
            return True

    expect_passed("lab12.3", from_memory)


def test_lab12_3_serialization_load_passes():
    def by_serialization(path):
        readable = True
        try:
            torch.serialization.load(path, weights_only=True)
        except Exception:
            readable = False
        return not readable

    expect_passed("lab12.3", by_serialization)


def test_lab12_3_suppressed_errors_pass():
    def suppressed(path):
        with contextlib.suppress(Exception):
            with open(path, "rb") as fh:
                torch.load(fh, weights_only=True, mmap=False)
            return False
        return True

    expect_passed("lab12.3", suppressed)


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


def _static_batch(model, example_args, path):
    torch.export.save(torch.export.export(model, tuple(example_args)), path)


@pytest.mark.parametrize("task_id, answer", [
    ("lab12.1", _whole_module),
    ("lab12.2", _static_batch),
    ("lab12.3", lambda path: True),
], ids=["lab12.1", "lab12.2", "lab12.3"])
def test_feedback_reads_in_one_language(task_id, answer, monkeypatch):
    expect_one_language(task_id, answer, monkeypatch)
