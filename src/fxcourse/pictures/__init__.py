"""Pictures: ``draw`` (Graphviz drawings of FX, TorchScript and captured graphs, with marks
for breaks and diffs) and ``plot`` (bar charts of measured numbers).

This folder imports the ground floor and ``fxcourse.viewers`` (a drawing of a capture or a
diff reads the viewer's object), never ``checks`` or ``tooling``; see ``src/fxcourse/README.md``.
"""
