"""The glossary of 中文 terms (``course/GLOSSARY.md``) and the check that applies it.

The glossary is a markdown table: ``English | 中文 | avoid | note``. A 中文 prose cell is
reported when it uses a word from the *avoid* column while its English twin uses the term,
unless

- the avoided word is the glossary's own translation of another term the English twin also
  uses (变换 is right for "transform", even in a cell that also says "pass");
- it sits inside a parenthesised gloss (``图中断（graph break，社区也常说“断图”）``);
- it is part of a longer, unrelated word (遍 in 遍历 or 一遍, 种子 in 随机种子, 挂钩 in 挂钩子);
- the English word is used in another sense ("pass" the verb, a "forward pass"; a random "seed").

Code (fenced blocks and backtick spans) is ignored on both sides.

>>> terms = parse("| English | 中文 | avoid | note |\\n|---|---|---|---|\\n"
...               "| pass; passes | pass | 变换; 遍 | a compiler pass |\\n"
...               "| transform; transforms | 变换 | 转换器 | |\\n")
>>> [(t.english, t.avoid) for t in terms]
[(('pass', 'passes'), ('变换', '遍')), (('transform', 'transforms'), ('转换器',))]
>>> [f.avoided for f in findings("A DCE pass removes dead code.", "DCE 变换删除死代码。", terms)]
['变换']
>>> findings("We pass the input to the model.", "我们把输入传给模型，再运行一遍变换。", terms)
[]
>>> findings("A transform (a *pass*) edits the graph.", "一个变换（pass）编辑计算图。", terms)
[]
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Finding", "Term", "find_glossary", "findings", "load", "parse"]

GLOSSARY = "GLOSSARY.md"

#: Longer words that contain an avoided word but mean something else: (before, after)
#: patterns around the avoided word; a match of either side excuses it.
_UNRELATED = {
    "遍": (r"(?:[普一两二三四五六七八九十几多整每数再]|\d\s*)$", r"^[历布]"),
    "种子": (r"(?:随机|[这那各某每哪此该一几多])$", r"^$^"),
    "变换": (r"(?:线性|仿射)$", r"^$^"),
    "再编译": (r"[不，,；、]$", r"^$^"),  # 不再编译 "no longer compiles", 先……，再编译 "then compile"
    "挂钩": (r"^$^", r"^子"),  # 挂钩子 "hang hooks" uses the right word
}

# English words used in another sense than the glossary's, per term (its first spelling).
_NOUN_BEFORE = {
    "a", "an", "the", "our", "this", "that", "these", "those", "each", "every", "one", "two", "three",
    "four", "five", "first", "second", "last", "later", "real", "your", "its", "their", "my", "own",
    "other", "c++", "fx", "jit", "graph", "clean-up", "cleanup", "post-grad", "pre-grad", "joint-graph",
    "cpu-specific", "freezing", "deployment", "fusion", "optimization", "optimisation", "compiler",
    "custom", "such", "no", "running", "run", "runs", "write", "writes", "writing", "wrote", "watching",
    "among", "some", "several", "many", "new", "lowering", "inductor's", "torchscript's", "dynamo's",
}
_NOUN_AFTER = {"pipeline", "pipelines", "author", "authors", "manager", "managers", "internals", "that",
               "which", "is", "are", "was", "were", "changes", "changed", "edits", "rewrites", "removes",
               "builds", "runs", "folds", "creates", "created", "rewrite", "remove", "fold", "turns"}
_VERB_AFTER = {"it", "them", "its", "their", "every", "each", "silently", "here", "with", "on", "in",
               "floats", "tensors", "names", "guards", "the", "a", "an"}


def _pass_is_compiler(before: str, word: str, after: str) -> bool:
    """Is this "pass"/"passes" a compiler pass (a noun), not the verb or a forward pass?"""
    prev = re.search(r"([\w+'’-]+)[*_\s]*$", before)
    prev_word = prev.group(1).lower().replace("’", "'") if prev and before[prev.end():].strip(" *_\n") == "" else ""
    nxt = re.match(r"[*_\s]*([\w'-]+)", after)
    next_word = nxt.group(1).lower() if nxt else ""
    if prev_word in ("forward", "backward", "whole", "elementwise") or next_word in ("over", "through") \
            or after.startswith("-"):
        return False
    if prev_word in _NOUN_BEFORE or next_word in _NOUN_AFTER:
        return True
    plural = word.lower().endswith("es")
    if plural and prev_word in ("to", "from", "of"):
        return True
    return plural and prev_word == "" and next_word not in _VERB_AFTER


def _seed_is_notes(before: str, word: str, after: str) -> bool:
    """Is this "seed" the source notes, not a random seed?"""
    prev = re.search(r"([\w-]+)\W*$", before)
    return not (prev and prev.group(1).lower() in ("random", "manual", "rng")) and \
        not re.match(r"\s+(the|it|every|each|torch|with)\b", after)


_SENSE = {"pass": _pass_is_compiler, "source notes": _seed_is_notes}


@dataclass(frozen=True)
class Term:
    """One row of the glossary."""

    english: tuple[str, ...]
    chinese: str
    avoid: tuple[str, ...]
    note: str = ""

    def used_in(self, english_text: str) -> str | None:
        """The first word of ``english_text`` (code already removed) that uses this term in the
        glossary's sense, or None."""
        sense = _SENSE.get(self.english[0])
        for spelling in self.english:
            pattern = r"(?<![\w-])" + r"\s+".join(map(re.escape, spelling.split())) + r"s?(?![\w-])"
            for m in re.finditer(pattern, english_text, re.I):
                if sense is None or sense(english_text[:m.start()], m.group(0), english_text[m.end():]):
                    return " ".join(m.group(0).split())
        return None


@dataclass(frozen=True)
class Finding:
    """An avoided word in a 中文 cell, the term its English twin uses, and what to write."""

    avoided: str
    term: Term
    english: str  # the word of the English twin that uses the term

    def __str__(self) -> str:
        return f"{self.avoided} -> {self.term.chinese}"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip().strip("`") for v in value.split(";") if v.strip())


def parse(markdown: str) -> list[Term]:
    """The rows of the first table whose header starts ``English | 中文 | avoid``."""
    terms: list[Term] = []
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        head = [c.lower() for c in _cells(line)] if line.lstrip().startswith("|") else []
        if head[:3] != ["english", "中文", "avoid"]:
            continue
        for row in lines[i + 2:]:
            if not row.lstrip().startswith("|"):
                break
            cells = _cells(row) + ["", "", "", ""]
            english, chinese, avoid, note = cells[:4]
            if _split(english):
                terms.append(Term(_split(english), chinese.strip("`"), _split(avoid), note))
        break
    return terms


def find_glossary(notebook: str | Path) -> Path | None:
    """``course/GLOSSARY.md`` of the course holding ``notebook``: looked for beside it (a
    lecture) and in ``course/`` of each folder above it (a lab, a solution, an export)."""
    folder = Path(notebook).resolve().parent
    if (folder / GLOSSARY).is_file() and folder.name == "course":
        return folder / GLOSSARY
    for parent in (folder, *folder.parents):
        if (parent / "course" / GLOSSARY).is_file():
            return parent / "course" / GLOSSARY
    return None


_LOADED: dict[tuple[str, float], list[Term]] = {}


def load(path: str | Path) -> list[Term]:
    """The terms of the glossary at ``path`` (read once per version of the file)."""
    path = Path(path)
    key = (str(path.resolve()), path.stat().st_mtime)
    if key not in _LOADED:
        _LOADED[key] = parse(path.read_text(encoding="utf-8"))
    return _LOADED[key]


def _prose(markdown: str) -> str:
    """``markdown`` with fenced code and backtick spans blanked (offsets kept; the blank is
    not a space, so the word before a code span is not taken for the word before the next)."""
    blank = lambda m: "\0" * len(m.group(0))  # noqa: E731
    text = re.sub(r"^[ \t]*```.*?^[ \t]*```[^\n]*$", blank, markdown, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", blank, text)


def _parenthesised(text: str) -> list[tuple[int, int]]:
    """Spans inside （…） or (…), nesting allowed, within the text."""
    spans, stack = [], []
    for i, ch in enumerate(text):
        if ch in "(（":
            stack.append(i)
        elif ch in ")）" and stack:
            start = stack.pop()
            if not stack:
                spans.append((start, i))
    return spans


def _unrelated(word: str, before: str, after: str) -> bool:
    patterns = _UNRELATED.get(word)
    return bool(patterns) and bool(re.search(patterns[0], before) or re.search(patterns[1], after))


def findings(english: str, chinese: str, terms: list[Term]) -> list[Finding]:
    """Avoided words in the 中文 cell ``chinese`` whose term its English twin ``english`` uses
    (one finding per word)."""
    en, zh = _prose(english), _prose(chinese)
    used = {t: word for t in terms if (word := t.used_in(en))}
    if not used:
        return []
    right = {t.chinese for t in used}  # translations of terms the English uses
    glossed = _parenthesised(zh)
    found: list[Finding] = []
    for term, english_word in used.items():
        for word in term.avoid:
            if word in right:
                continue
            for m in re.finditer(re.escape(word), zh):
                inside = any(a < m.start() and m.end() <= b for a, b in glossed)
                if not inside and not _unrelated(word, zh[:m.start()], zh[m.end():]):
                    found.append(Finding(word, term, english_word))
                    break
    return found
