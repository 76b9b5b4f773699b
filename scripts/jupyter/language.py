"""JupyterLab set-up for reading the course in one language (used by scripts/course.sh --lang).

``prepare(lang)`` returns the environment and command-line options that make a JupyterLab
server show one language, and writes the two small folders they point to:

* ``<app dir>/config-<lang>/custom/custom.css`` hides the other language's prose cells
  (``fxcourse._toggle.HIDE_CSS``: the jupyterlab-celltagsclasses extension gives every cell its
  tags as ``cell-tag-<tag>`` classes) and, where the interface is English (``both``, and ``en``
  for a notebook switched to 中文 with ``fxcourse.language``), draws 中文 cells with Simplified
  Chinese fonts (``fxcourse._toggle.ZH_CSS``; under ``zh`` the page itself says
  ``lang="zh-CN"``). JupyterLab loads ``custom/custom.css`` from the Jupyter config directory
  when started with ``--LabApp.custom_css=True``, so that directory becomes
  ``JUPYTER_CONFIG_DIR``; the learner's own config directory stays on ``JUPYTER_CONFIG_PATH``
  and their user settings and workspaces keep their usual folders.
* ``<app dir>/settings-<lang>/overrides.json`` is the default settings overrides (the course's
  ``settings/overrides.json`` and anything else there) plus the interface language (``zh_CN``
  from the installed language pack, or ``en``) and a notebook windowing mode that keeps every
  cell attached to the page, so hidden cells never confuse virtual scrolling. Overrides are
  defaults: a choice the learner made in JupyterLab's own Settings menu still wins.

``both`` hides nothing and keeps JupyterLab's settings (only the custom CSS for 中文 fonts).
Notebook files are never touched.

    python scripts/jupyter/language.py zh     # prints shell lines for course.sh to eval
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

#: Settings each one-language mode adds to JupyterLab's overrides.
LOCALE = {"en": "en", "zh": "zh_CN"}
#: 'defer' attaches every cell (idle time), like 'none', but opens long notebooks faster.
WINDOWING = "defer"
#: Set by course.sh for the server it starts: the learner's own config directory, so a
#: course.sh started from a JupyterLab terminal finds it again.
LEARNER_CONFIG_ENV = "FXCOURSE_LEARNER_CONFIG_DIR"


def _learner_dirs() -> dict[str, str]:
    """The learner's Jupyter config, user-settings and workspaces directories, as JupyterLab
    would choose them without us."""
    from jupyter_core.paths import jupyter_config_dir

    config = os.environ.get(LEARNER_CONFIG_ENV) or jupyter_config_dir()
    settings = os.environ.get("JUPYTERLAB_SETTINGS_DIR") or os.path.join(config, "lab", "user-settings")
    workspaces = os.environ.get("JUPYTERLAB_WORKSPACES_DIR") or os.path.join(config, "lab", "workspaces")
    return {"config": os.path.abspath(config), "settings": os.path.abspath(settings),
            "workspaces": os.path.abspath(workspaces)}


def _merge(into: dict, extra: dict) -> dict:
    for plugin, values in extra.items():
        into.setdefault(plugin, {}).update(values)
    return into


def prepare(lang: str, app_dir: str | os.PathLike | None = None) -> tuple[dict[str, str], list[str]]:
    """Write the ``lang`` folders under JupyterLab's app directory; return (env, args) for the
    ``jupyter lab`` command. ``lang`` is 'en', 'zh' or 'both' (already normalised)."""
    if lang not in ("en", "zh", "both"):
        raise ValueError(f"lang must be 'en', 'zh' or 'both', not {lang!r}")
    from fxcourse._toggle import HIDE_CSS, ZH_CSS
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server.settings_utils import _get_overrides

    app = Path(app_dir or get_app_dir())
    learner = _learner_dirs()

    config = app / f"config-{lang}"
    (config / "custom").mkdir(parents=True, exist_ok=True)
    css = []
    if HIDE_CSS[lang]:
        css += [f"/* fxcourse --lang {lang}: only one language's prose cells */", HIDE_CSS[lang]]
    if lang != "zh":  # an English interface: <html lang="en">
        css += ["/* fxcourse: 中文 cells in Simplified Chinese glyph forms */", ZH_CSS]
    own = Path(learner["config"], "custom", "custom.css")
    if own.is_file() and own.resolve() != (config / "custom" / "custom.css").resolve():
        css += ["/* the learner's own custom.css */", own.read_text(encoding="utf-8")]
    (config / "custom" / "custom.css").write_text("\n".join(css) + "\n", encoding="utf-8")
    path = os.pathsep.join(p for p in (learner["config"], os.environ.get("JUPYTER_CONFIG_PATH", "")) if p)
    env = {"JUPYTER_CONFIG_DIR": str(config), "JUPYTER_CONFIG_PATH": path,
           LEARNER_CONFIG_ENV: learner["config"],
           "JUPYTERLAB_SETTINGS_DIR": learner["settings"], "JUPYTERLAB_WORKSPACES_DIR": learner["workspaces"]}
    args = ["--LabApp.custom_css=True"]
    if lang == "both":  # JupyterLab's own settings as they are
        return env, args

    # The settings folder sits next to the default one: JupyterLab reads the built app's
    # metadata from the settings folder's parent.
    base, settings = app / "settings", app / f"settings-{lang}"
    settings.mkdir(parents=True, exist_ok=True)
    overrides, error = _get_overrides(str(base)) if base.is_dir() else ({}, "")
    if error:
        print(f"[course] {error}", file=sys.stderr)
    _merge(overrides, {
        "@jupyterlab/translation-extension:plugin": {"locale": LOCALE[lang]},
        "@jupyterlab/notebook-extension:tracker": {"windowingMode": WINDOWING},
    })
    (settings / "overrides.json").write_text(json.dumps(overrides, indent=2, ensure_ascii=False) + "\n",
                                             encoding="utf-8")
    for name in ("page_config.json", "page_config.json5"):
        if (base / name).is_file():
            shutil.copyfile(base / name, settings / name)
        elif (settings / name).exists():
            (settings / name).unlink()

    args.append(f"--LabApp.app_settings_dir={settings}")
    return env, args


def main(argv: list[str]) -> int:
    from fxcourse._lang import normalise

    lang = normalise(argv[0] if argv else None)
    if lang is None:
        print(f"course.sh: --lang {argv[0]!r} is not a choice: use en, zh or both "
              f"/ 不支持 --lang {argv[0]!r}：请用 en、zh 或 both", file=sys.stderr)
        return 2
    env, args = prepare(lang)
    print(f"FXCOURSE_LANG={lang}")
    for name, value in env.items():
        print(f"export {name}={shlex.quote(value)}")
    print("lang_args=(" + " ".join(shlex.quote(a) for a in args) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
