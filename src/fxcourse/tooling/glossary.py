"""The glossary of 中文 terms (``course/GLOSSARY.md``) and the check that applies it.

The glossary is a markdown table: ``English | 中文 | avoid | note``. A 中文 prose cell is
reported when it uses a word from the *avoid* column while its English twin uses the term,
unless

- the avoided word is the glossary's own translation of another term the English twin also
  uses (变换 is right for "transform", even in a cell that also says "pass");
- it sits inside a parenthesised gloss (``图中断（graph break，社区也常说“断图”）``);
- it is part of a longer, unrelated word (遍 in 遍历 or 一遍, 种子 in 随机种子, 挂钩 in 挂钩子);
- the English word is used in another sense ("pass" the verb, a "forward pass"; a random "seed").

Code (fenced blocks and backtick spans) is ignored on both sides. Where two terms overlap,
the longer one is the one used ("MLIR op" is not also an "op", "fallback kernel" not also a
"fallback"), and an avoided word inside the right translation of a used term is no finding
(后备 inside 后备内核).

:func:`english_in` reports the other way of leaving a term untranslated: a glossary term
written in English inside 中文 prose ("这个 batch 的大小") where the glossary has a 中文 form.
It allows code spans and blocks, identifiers and API names (``torch.cond``, register_fake,
FakeTensor: any spelling with a capital, a digit, ``_`` or ``.``, and any word that is part of a
longer identifier), a gloss in parentheses after the 中文 term in the same clause
(伪张量（fake tensor）, 守卫（guard）), a quoted English phrase with no 中文 in it (an error
message: *Failed to trace builtin operator*), and link targets and URLs.

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
>>> terms += parse("| English | 中文 | avoid | note |\\n|---|---|---|---|\\n| guard; guards | 守卫 | | |\\n")
>>> [str(f) for f in english_in("Dynamo 检查每个 guard；守卫（guard）由 `guard` 组成。", terms)]
['guard -> 守卫']
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["English", "Finding", "Term", "english_in", "find_glossary", "findings", "load", "parse"]

GLOSSARY = "GLOSSARY.md"

#: Longer words that contain an avoided word but mean something else: (before, after)
#: patterns around the avoided word; a match of either side excuses it.
_UNRELATED = {
    "遍": (r"(?:[普一两二三四五六七八九十几多整每数再]|\d\s*)$", r"^[历布]"),
    "种子": (r"(?:随机|[这那各某每哪此该一几多])$", r"^$^"),
    "变换": (r"(?:线性|仿射)$", r"^$^"),
    "再编译": (r"[不，,；、]$", r"^$^"),  # 不再编译 "no longer compiles", 先……，再编译 "then compile"
    "挂钩": (r"^$^", r"^子"),  # 挂钩子 "hang hooks" uses the right word
    "后备": (r"^$^", r"^内核"),  # 后备内核 is a term of its own (the dispatcher's "Tracer fallback")
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
    chinese: str  # as shown in messages: the forms joined by " / "
    avoid: tuple[str, ...]
    note: str = ""

    @property
    def forms(self) -> tuple[str, ...]:
        """The 中文 forms the glossary accepts (批 / 批次)."""
        return tuple(f.strip() for f in self.chinese.split(" / ") if f.strip())

    @property
    def translated(self) -> bool:
        """Does the glossary give a 中文 form (not "keep the English word", not "do not cite")?"""
        return any(_CJK.search(f) and not f.startswith("(") for f in self.forms)

    def patterns(self) -> list[re.Pattern[str]]:
        """One pattern per English spelling (plural ``s`` allowed; whitespace may wrap)."""
        return [re.compile(r"(?<![A-Za-z0-9_-])" + r"\s+".join(map(re.escape, spelling.split()))
                           + r"s?(?![A-Za-z0-9_-])", re.I) for spelling in self.english]

    def used_in(self, english_text: str) -> str | None:
        """The first word of ``english_text`` (code already removed) that uses this term in the
        glossary's sense, or None (a longer term that overlaps it is not looked at here; see
        :func:`uses`)."""
        found = uses(english_text, [self])
        return found[0][2] if found else None


def _spans(text: str, terms: list[Term]) -> list[tuple[int, int, Term]]:
    """Every match of every spelling of ``terms`` in ``text``, longest first where they overlap
    (so "MLIR op" wins over "op"); overlapping shorter matches are dropped."""
    every = [(m.start(), m.end(), t) for t in terms for pattern in t.patterns() for m in pattern.finditer(text)]
    every.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
    kept: list[tuple[int, int, Term]] = []
    for start, end, term in every:
        if all(end <= a or start >= b for a, b, _ in kept):
            kept.append((start, end, term))
    return sorted(kept, key=lambda s: s[0])


def uses(english_text: str, terms: list[Term]) -> list[tuple[Term, int, str]]:
    """``(term, offset, word)`` for each use of a term in English prose, in the glossary's sense."""
    out = []
    for start, end, term in _spans(english_text, terms):
        sense = _SENSE.get(term.english[0])
        if sense is None or sense(english_text[:start], english_text[start:end], english_text[end:]):
            out.append((term, start, " ".join(english_text[start:end].split())))
    return out


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
                terms.append(Term(_split(english), " / ".join(_split(chinese)), _split(avoid), note))
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


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

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
    """Spans inside （…） or (…), nesting allowed, within the text. Each kind of bracket pairs
    with its own kind, and a paragraph break closes what is left open, so one stray bracket
    ("1)" in a list, an unclosed "(") does not swallow the rest of the cell."""
    spans = []
    for opener, closer in (("（", "）"), ("(", ")")):
        stack: list[int] = []
        for m in re.finditer(re.escape(opener) + "|" + re.escape(closer) + r"|\n[ \t]*\n", text):
            ch = m.group(0)
            if ch == opener:
                stack.append(m.start())
            elif ch == closer:
                if stack:
                    start = stack.pop()
                    if not stack:
                        spans.append((start, m.start()))
            else:
                stack = []
    return sorted(spans)


def _unrelated(word: str, before: str, after: str) -> bool:
    patterns = _UNRELATED.get(word)
    return bool(patterns) and bool(re.search(patterns[0], before) or re.search(patterns[1], after))


def findings(english: str, chinese: str, terms: list[Term]) -> list[Finding]:
    """Avoided words in the 中文 cell ``chinese`` whose term its English twin ``english`` uses
    (one finding per word)."""
    en, zh = _prose(english), _prose(chinese)
    used: dict[Term, str] = {}
    for term, _, word in uses(en, terms):
        used.setdefault(term, word)
    if not used:
        return []
    right = {form for t in used for form in t.forms}  # translations of terms the English uses
    inside_right = [(m.start(), m.end()) for form in right for m in re.finditer(re.escape(form), zh)]
    glossed = _parenthesised(zh)
    found: list[Finding] = []
    for term, english_word in used.items():
        for word in term.avoid:
            if word in right:
                continue
            for m in re.finditer(re.escape(word), zh):
                inside = any(a < m.start() and m.end() <= b for a, b in glossed)
                part_of_right = any(a <= m.start() and m.end() <= b for a, b in inside_right)
                if not inside and not part_of_right and not _unrelated(word, zh[:m.start()], zh[m.end():]):
                    found.append(Finding(word, term, english_word))
                    break
    return found


# -- English terms inside 中文 prose -----------------------------------------------------------

@dataclass(frozen=True)
class English:
    """A glossary term written in English inside 中文 prose, and what to write instead."""

    word: str
    term: Term
    offset: int  # in the cell's source

    def __str__(self) -> str:
        return f"{self.word} -> {self.term.chinese}"


def _checked_spelling(spelling: str) -> bool:
    """A spelling a reader would write as a word (not an identifier such as FakeTensor, IR or
    weights_only)."""
    return re.fullmatch(r"[a-z][a-z -]*", spelling) is not None


def _not_prose(markdown: str) -> str:
    """:func:`_prose`, with link targets, URLs, HTML tags and comments, and math also blanked."""
    blank = lambda m: "\0" * len(m.group(0))  # noqa: E731
    text = _prose(markdown)
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    text = re.sub(r"</?[A-Za-z][^<>\n]*>", blank, text)
    text = re.sub(r"(?<=\])\([^()\s]*(?:\s+\"[^\"]*\")?\)", blank, text)  # [text](target "title")
    text = re.sub(r"^\s*\[[^\]\n]+\]:.*$", blank, text, flags=re.M)  # [ref]: target
    text = re.sub(r"(?:https?|file)://\S+|www\.\S+", blank, text)
    return re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", blank, text, flags=re.S)


_IDENT_BEFORE = re.compile(r"[A-Za-z0-9_./@:#\\-]$")
_IDENT_AFTER = re.compile(r"^(?:[A-Za-z0-9_/\\(\[-]|[.:][A-Za-z0-9_])")
_CLAUSE_END = "，。；：！？、,;:!?\n"
_QUOTES = (("“", "”"), ("‘", "’"), ("「", "」"), ("《", "》"))


def _quoted_english(text: str) -> list[tuple[int, int]]:
    """Spans of quoted or emphasised phrases with no 中文 in them (an English message cited)."""
    spans = []
    for open_, close in _QUOTES:
        spans += [(m.start(), m.end()) for m in re.finditer(re.escape(open_) + r"[^" + close + r"\n]*" + close, text)]
    spans += [(m.start(), m.end()) for m in re.finditer(r'"[^"\n]*"', text)]
    # an emphasised phrase of three words or more (*Failed to trace builtin operator*), not a
    # bold term (**fake tensor**)
    spans += [(m.start(), m.end()) for m in re.finditer(r"(?<![*\w])(\*{1,2}|_)(?=\S)([^*\n]+?)(?<=\S)\1(?![*\w])", text)
              if len(m.group(2).split()) >= 3]
    return [(a, b) for a, b in spans if not _CJK.search(text[a:b])]


def _gloss_of(term: Term, text: str, start: int, end: int, glossed: list[tuple[int, int]]) -> bool:
    """Is text[start:end] inside a parenthesised gloss that follows the term's 中文 form in the
    same clause (守卫（guard）, 步长不一致（stride mismatch））?"""
    for a, b in glossed:
        if a < start and end <= b:
            before = text[:a].replace("*", "").replace("\0", "")
            clause = re.split("[" + re.escape(_CLAUSE_END) + "]", before)[-1]
            if any(form in clause for form in term.forms):
                return True
    return False


def english_in(chinese: str, terms: list[Term]) -> list[English]:
    """Glossary terms written in English in the 中文 prose ``chinese`` where the glossary gives a
    中文 form (see the module's docstring for what is allowed); one finding per term."""
    text = _not_prose(chinese)
    glossed = _parenthesised(text)
    quoted = _quoted_english(text)
    found: dict[Term, English] = {}
    for start, end, term in _spans(text, terms):
        word = text[start:end]
        if term in found or not term.translated:
            continue
        if not any(_checked_spelling(s) and p.fullmatch(word) for s, p in zip(term.english, term.patterns())):
            continue
        if " ".join(word.split()).lower() in {f.lower() for f in term.forms}:
            continue  # a form the glossary keeps in English (batch norm)
        if _IDENT_BEFORE.search(text[:start]) or _IDENT_AFTER.search(text[end:]):
            continue  # part of an identifier, a path or a call
        if any(a <= start and end <= b for a, b in quoted) or _gloss_of(term, text, start, end, glossed):
            continue
        found[term] = English(" ".join(word.split()), term, start)
    return sorted(found.values(), key=lambda f: f.offset)
