"""Dynamo's process-wide settings (its config and torch.compiler's stance), as checkers keep them.

An answer that changes them and leaves them changed would change every later compile in the
learner's notebook; a checker reads them before and after the answer and puts them back. Used by
the lab06 and lab07 checkers.

>>> before = dynamo_state()
>>> import torch
>>> torch._dynamo.config.capture_scalar_outputs = not before[0]["capture_scalar_outputs"]
>>> restore(before)
['torch._dynamo.config.capture_scalar_outputs: False -> True']
>>> dynamo_state()[0] == before[0]
True
"""
from __future__ import annotations

from typing import Any

import torch

__all__ = ["defaults", "dynamo_state", "flip", "restore", "set_state"]


def dynamo_state() -> tuple[dict[str, Any], Any]:
    """Dynamo's process-wide settings an answer could change: its config and torch.compiler's stance."""
    from torch._dynamo import eval_frame
    return torch._dynamo.config.get_config_copy(), eval_frame._stance


def defaults() -> tuple[dict[str, Any], Any]:
    """Dynamo's settings as a fresh process has them (no environment variable, no assignment)."""
    from torch._dynamo import eval_frame
    from torch.utils._config_module import _UNSET_SENTINEL
    entries = torch._dynamo.config._config
    config = {key: entries[key].default for key in torch._dynamo.config.get_config_copy()
              if key in entries and entries[key].default is not _UNSET_SENTINEL}
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
            changed.append(f"torch._dynamo.config.{key}: {now_config[key]!r} -> {config[key]!r}")
            setattr(torch._dynamo.config, key, config[key])
    if now_stance != stance:
        changed.append(f"torch.compiler stance: {getattr(now_stance, 'stance', now_stance)!r} -> "
                       f"{getattr(stance, 'stance', stance)!r}")
        eval_frame._set_stance(stance)
    return changed


def restore(before: tuple[dict[str, Any], Any]) -> list[str]:
    """Put back what changed since ``before``; return what had changed, as ``name: before -> now``."""
    return [flip(line) for line in set_state(before)]


def flip(line: str) -> str:
    """``name: a -> b`` as ``name: b -> a``."""
    name, _, values = line.partition(": ")
    before, _, after = values.partition(" -> ")
    return f"{name}: {after} -> {before}"
