"""Viewers: objects that show what PyTorch built (graphs, bytecode, captures, kernels, stages).

Each public module holds one viewer (``graph_table``, ``graph_diff``, ``bytecode``,
``capture``, ``compare``, ``inductor``, ``lowering``); the private ones are the rows,
labels, logs and child-process runs they share. A viewer returns an object and never
prints. This folder imports only the ground floor (``fxcourse.errors``, ``_lang``,
``_text``, ``_render``, ``_values``, ``zoo``) and itself; see ``src/fxcourse/README.md``.
The public names are reached through ``fxcourse`` itself (``fxcourse.graph_table``).
"""
