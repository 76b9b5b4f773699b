"""Dynamo's process-wide settings (its config, ``torch.compiler.config`` and torch.compiler's stance),
as checkers keep them.

An answer that changes them and leaves them changed would change every later compile in the
learner's notebook (``torch.compiler.config.dynamic_sources`` marks inputs dynamic for every
later compile, as ``torch._dynamo.config`` settings do); a checker reads them before and after
the answer and puts them back (:func:`keeping_settings`). Used by the lab06, lab07 and lab08
checkers.

>>> before = dynamo_state()
>>> import torch
>>> torch._dynamo.config.capture_scalar_outputs = not before[0]["capture_scalar_outputs"]
>>> restore(before)
['torch._dynamo.config.capture_scalar_outputs: False -> True']
>>> dynamo_state()[0] == before[0]
True
>>> torch.compiler.config.dynamic_sources = "L['x']"
>>> restore(before) == ["torch.compiler.config.dynamic_sources: '' -> " + repr("L['x']")]
True
"""
from __future__ import annotations

from typing import Any, Callable

import torch

__all__ = ["defaults", "dynamo_state", "flip", "keeping_settings", "left_changed", "restore", "run_kept",
           "set_state"]


#: ``torch.compiler.config``'s keys appear in the config dict with this prefix
COMPILER = "torch.compiler.config."


#: the prefix of the keys of symbolic shapes' config (backed_size_oblivious and the rest)
SHAPES = "torch.fx.experimental._config."


def _modules() -> list[tuple[str, Any]]:
    """(prefix of the keys, config module): Dynamo's own config, torch.compiler's, and symbolic shapes'."""
    import torch.fx.experimental._config as shapes

    return [("", torch._dynamo.config), (COMPILER, torch.compiler.config), (SHAPES, shapes)]


def _where(key: str) -> tuple[Any, str, str]:
    """The config module holding ``key``, the attribute's name there, and its full name for a message."""
    for prefix, module in _modules()[1:]:
        if key.startswith(prefix):
            return module, key[len(prefix):], key
    return torch._dynamo.config, key, f"torch._dynamo.config.{key}"


def dynamo_state() -> tuple[dict[str, Any], Any]:
    """Dynamo's process-wide settings an answer could change: its config, ``torch.compiler.config``
    (keys prefixed with ``COMPILER``) and torch.compiler's stance."""
    from torch._dynamo import eval_frame
    config = {prefix + key: value for prefix, module in _modules()
              for key, value in module.get_config_copy().items()}
    return config, eval_frame._stance


def defaults() -> tuple[dict[str, Any], Any]:
    """Dynamo's settings as a fresh process has them (no environment variable, no assignment)."""
    from torch._dynamo import eval_frame
    from torch.utils._config_module import _UNSET_SENTINEL
    config = {}
    for prefix, module in _modules():
        entries = module._config
        config.update({prefix + key: entries[key].default for key in module.get_config_copy()
                       if key in entries and entries[key].default is not _UNSET_SENTINEL})
    return config, eval_frame.DynamoStance()


def set_state(want: tuple[dict[str, Any], Any]) -> list[str]:
    """Make Dynamo's settings ``want`` (:func:`dynamo_state`'s shape; the config may name only some
    keys); return what differed, as ``name: now -> want`` lines."""
    from torch._dynamo import eval_frame
    config, stance = want
    now_config, now_stance = dynamo_state()
    changed = []
    for key in sorted(config):
        if key in now_config and now_config[key] != config[key]:
            module, name, shown = _where(key)
            changed.append(f"{shown}: {now_config[key]!r} -> {config[key]!r}")
            setattr(module, name, config[key])
    if now_stance != stance:
        changed.extend(_stance_changes(now_stance, stance))
        eval_frame._set_stance(stance)
    return changed


def _stance_changes(now: Any, want: Any) -> list[str]:
    """The stance's fields that differ, as ``name: now -> want`` lines (its name, and e.g.
    ``skip_guard_eval_unsafe``, which set_stance can change while the name stays "default")."""
    import dataclasses

    if dataclasses.is_dataclass(now) and type(now) is type(want):
        lines = [f"torch.compiler stance{'' if f.name == 'stance' else ' ' + f.name}: "
                 f"{getattr(now, f.name)!r} -> {getattr(want, f.name)!r}"
                 for f in dataclasses.fields(now) if getattr(now, f.name) != getattr(want, f.name)]
        if lines:
            return lines
    return [f"torch.compiler stance: {getattr(now, 'stance', now)!r} -> {getattr(want, 'stance', want)!r}"]


def restore(before: tuple[dict[str, Any], Any]) -> list[str]:
    """Put back what changed since ``before``; return what had changed, as ``name: before -> now``."""
    return [flip(line) for line in set_state(before)]


def flip(line: str) -> str:
    """``name: a -> b`` as ``name: b -> a``."""
    name, _, values = line.partition(": ")
    before, _, after = values.partition(" -> ")
    return f"{name}: {after} -> {before}"


def run_kept(call: Callable[[], None], from_defaults: bool = False
             ) -> tuple[BaseException | None, list[str], list[str]]:
    """Run ``call()`` with Dynamo's settings kept: whatever it changes is put back. With
    ``from_defaults`` it runs under Dynamo's defaults and the caller's own settings come back
    afterwards. Returns what ``call`` raised (None if nothing), what it left changed (``name:
    before -> after`` lines), and, with ``from_defaults``, which of the caller's settings differed
    from the defaults (``name: now (default: d)``)."""
    caller = dynamo_state()
    start = defaults() if from_defaults else caller
    differed = ([line.replace(" -> ", " (default: ", 1) + ")" for line in set_state(start)]
                if from_defaults else [])
    outcome: BaseException | None = None
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - handed back to the caller, who re-raises it
        outcome = exc
    left = restore(start)
    set_state(caller)
    return outcome, left, differed


def under_defaults(compute: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator for a checker's reference computation: it runs under Dynamo's defaults, whatever an
    answer (run earlier in the same check) left changed, and the settings it found come back afterwards,
    so a reference that is computed once and kept is never shaped by one answer's settings."""
    import functools

    @functools.wraps(compute)
    def computed(*args: Any, **kwargs: Any) -> Any:
        before = dynamo_state()
        set_state(defaults())
        try:
            return compute(*args, **kwargs)
        finally:
            set_state(before)

    return computed


def left_changed(changed: list[str], advice: tuple[str, str], tried: tuple[str, str]) -> Any:
    """The feedback (a ``Wrong``) for an answer that left Dynamo's settings changed: ``changed`` as
    :func:`restore` gives it, seen at the moment ``tried`` names; ``advice`` says what to do instead."""
    from . import Wrong  # the checks package imports the lab modules, which import this one

    return Wrong("your answer changed Dynamo's settings for the whole process, and left them changed "
                 "(the checker has put them back): every later torch.compile in your notebook would run "
                 f"with them. {advice[0]}",
                 "你的答案修改了整个进程的 Dynamo 设置，并且没有恢复（检查器已经把它们改回原样）：之后你的笔记本中的每一次 "
                 f"torch.compile 都会沿用这些设置。{advice[1]}",
                 tried=tried, expected=("Dynamo's settings as they were", "Dynamo 的设置保持原样"),
                 got="; ".join(changed))


def keeping_settings(advice: tuple[str, str], from_defaults: bool = True
                     ) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """A decorator: run a checker (the answer included) with Dynamo's settings kept, and put them back
    afterwards. An answer that changes them and leaves them changed is wrong (they would stay changed
    for every later compile in the notebook); ``advice`` says what to do instead. With ``from_defaults``
    the checker runs under Dynamo's defaults, whatever the notebook set before, and a wrong verdict says
    which of the notebook's settings differed; without it, under the notebook's own settings."""
    from . import Wrong

    def wrap(checker: Callable[[Any], None]) -> Callable[[Any], None]:
        def checked(answer: Any) -> None:
            outcome, left, notebook = run_kept(lambda: checker(answer), from_defaults=from_defaults)
            if left:
                raise left_changed(left, advice, ("Dynamo's settings before and after checking your answer",
                                                  "检查你的答案前后的 Dynamo 设置")) from None
            if isinstance(outcome, Wrong) and notebook:
                outcome.en += (" (Note: your notebook has changed some of Dynamo's settings: " + "; ".join(notebook)
                               + ". The checker ran everything, your answer included, with Dynamo's defaults, as "
                               "the task assumes.)")
                outcome.zh += ("（注意：你的笔记本修改了 Dynamo 的部分设置：" + "；".join(notebook)
                               + "。检查器按任务的假设，用 Dynamo 的默认设置运行了所有内容，包括你的答案。）")
            if outcome is not None:
                raise outcome
        checked.__name__ = checker.__name__
        checked.__doc__ = checker.__doc__
        return checked
    return wrap
