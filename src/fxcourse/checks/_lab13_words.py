"""Gather the words lab13.3's checker puts on its made-up rows: every word, and every pair of
words that occurs at least three times, in the messages torch's capture and compile stack can
write (string literals under ``torch/_dynamo``, ``_inductor``, ``jit``, ``export``, ``fx`` …,
Dynamo's graph-break registry) and in this library's own messages, in English and 中文; and
plain words about speed, trust and failure a learner may search for.

A rule that drops a row whose text holds some word (``re.search("falls back", row.reason)``)
meets, somewhere in the check, a winning row whose text holds that word. The checker splits the
list into slices and gives each slice to a winner of each path in turn, so no one row carries
it all (a right answer that prints its rows stays quick).

Run ``python -m fxcourse.checks._lab13_words`` after a torch upgrade to gather them again; the
list only widens what the check tries, so an old list still checks soundly.
"""
from __future__ import annotations

import ast
import collections
import importlib.util
import json
import re
import sys
from pathlib import Path

#: where the list lives, beside the checker
WORDS = Path(__file__).with_name("lab13_words.json")
#: torch's folders (and files) whose string literals are messages about capture, compiling and timing
TORCH_PARTS = ("_dynamo", "_inductor", "jit", "export", "_export", "fx", "_functorch", "_subclasses", "_logging",
               "_guards.py", "utils/benchmark")
#: plain words a learner may search a row's text for (about speed, trust, quality, failure), not torch's own:
#: each also capitalised and in capitals
PLAIN = """
    slow slower slowest sluggish laggy lag lagging delay delayed latency lazy crawl crawling stall stalled
    stalls fast faster fastest quick quicker speedy rapid blazing turbo boost boosted accelerate accelerated
    acceleration suspicious suspect fishy odd weird strange unusual unexpected surprising surprise anomaly
    anomalous abnormal irregular bogus fake phony spurious dubious questionable doubtful uncertain unsure
    unclear ambiguous vague murky trust trusted trustworthy untrustworthy distrust mistrust reliable
    reliability unreliable dependable undependable confidence confident unconfident credible incredible
    implausible plausible believable unbelievable quality poor bad worse worst terrible awful horrible lousy
    sloppy shoddy crappy junk garbage rubbish trash good better best great excellent fine ok okay acceptable
    unacceptable decent mediocre correct incorrect wrong right accurate inaccurate inaccuracy precise imprecise
    exact inexact approximate approx error errors mistake mistaken mistakes bug buggy bugs glitch glitchy
    defect defective flaw flawed faulty fault broken breaks broke busted damaged corrupt corrupted corruption
    garbled mangled stable unstable instability flaky flakey fragile brittle shaky wobbly erratic volatile
    fluctuate fluctuating fluctuation noisy noise noisier jitter jittery variance variable varies vary varying
    inconsistent inconsistency consistent outlier outliers spike spikes spiky burst bursty hiccup hiccups blip
    warning warn warned caution careful beware danger dangerous risky risk hazard unsafe safe deprecated
    obsolete outdated old legacy ancient dead unmaintained abandoned retired sunset unsupported supported
    unknown missing absent lacking lacks incomplete partial partially truncated skip skipped skipping ignored
    ignore omitted dropped bypass bypassed fallback fallbacks fell falls falling revert reverted reverting
    downgrade downgraded degrade degraded degradation mismatch mismatched mismatches differ differs different
    difference discrepancy deviation deviates diverge diverged fail fails failed failing failure crash crashed
    crashes hang hung freeze froze frozen timeout stuck weak weaker strong stronger robust solid cheat cheated
    cheating trick tricky hack hacky hacked workaround kludge cheap expensive costly overhead bloated heavy
    heavier light lightweight lean huge tiny small large massive enormous excessive extreme extremely absurd
    ridiculous insane crazy impossible unrealistic realistic too much many bottleneck throttle throttled
    throttling contention overload overloaded busy problem problems issue issues trouble troublesome concern
    concerning worry worrying alarming verify verified unverified validate validated invalid invalidated valid
    check checked unchecked untested tested guess guessed estimate estimated rough roughly nominal hmm huh oops
    uh-oh sorry unfortunately cannot can't couldn't unable stale cached cache warmup warm cold first initial
    startup measure measured measurement mismeasured timing timed untimed benchmark benchmarked sample samples
    sampled average mean median spread range std stdev sigma percentile quartile ratio times factor percent
    percentage fraction leak leaks leaking memory oom swap disk wrongly badly poorly slowly barely hardly
    rarely sometimes occasionally often always never limited limit limits constrained restricted restriction
    blocked block blocking banned forbidden disallowed compatible incompatible compatibility portable
    unportable platform target device optimize optimized optimization unoptimized suboptimal inefficient
    efficient efficiency wasteful waste disaster catastrophic fatal critical severe serious minor major
    inaccurately approximately precision imprecision tolerance tolerant lossy lossless genuine real actual true
    false truthful legit legitimate
""".split()
#: and 中文 ones
PLAIN_ZH = """
    慢 很慢 较慢 偏慢 太慢 变慢 缓慢 卡顿 延迟 快 最快 更快 加速 不准 不准确 精度 精度下降 误差 误差大 偏差 不稳定 不稳 波动 抖动 噪声 噪音 可疑 奇怪 异常 反常 意外 不可信 不可靠 不靠谱
    靠不住 可信 可靠 质量 质量差 很差 差 糟糕 坏 损坏 错 错误 出错 有误 不对 不正确 不一致 不同 差异 有差异 偏离 警告 注意 小心 危险 风险 弃用 过时 已过时 废弃 淘汰 旧 不支持 不兼容
    兼容 缺少 缺失 跳过 忽略 回退 降级 退化 失败 崩溃 卡死 超时 挂起 泄漏 内存 溢出 未检查 未验证 未测试 未对照 估计 近似 大约 粗略 离群 峰值 尖峰 方差 标准差 中位数 重新编译 编译 追踪
    捕获 图中断 断图 分支 常量 固化 形状 动态 数值 数值误差 浮点 半精度 低精度 有问题 问题 隐患 bug 缺陷 故障
""".split()
#: phrases of the lab's and the lectures' own text a learner may search a row's texts for (lectures 11 and 13
#: and lab 13 say them of paths: a wrong answer, a compiler on the target, C++ built on the first call)
PHRASES = [phrase.strip() for phrase in """
    wrong answer ; wrong answers ; a wrong answer ; gave a wrong answer ; gave another answer ; another answer ;
    same answer ; not the same ; wrong output ; incorrect output ; wrong result ; hard-coded ; valid only ;
    right only on inputs ; may be wrong ; might be wrong ; could be wrong ; no guarantee ; too fast ;
    suspiciously fast ; skipped work ; did nothing ; never checked ; checked on ; never ship ; few percent ;
    a few per cent ; capture format ; interquartile ; interquartile range ; needs a compiler ; needs Python ;
    without Python ; Python on target ; Python runtime ; no compiler ; C++ compiler ; compiles C++ ; compile C++ ;
    C++ on the first call ; on the first call ; first call ; gcc ; g++ ; clang ; TORCH_LIBRARY ;
    torch/extension.h ; extension.h ; does not know ; an op it does not know ; unknown op ; op library ;
    错误的答案 ; 错误答案 ; 答案错误 ; 结果不对 ; 没有报任何错误 ; 绝不要交付 ; 不认识的算子 ; 会停下 ; 编译 C++ ;
    没见过的输入 ; 开销 ; 需要编译器 ; 需要 Python ; 没有编译器 ; 第一次调用 ;
    Could not guard ; Unsupported: Data-dependent branching ; cannot be used as inputs to control flow ; TraceError: ;
    not verified ; aborted ; Tensor-likes are not close ; Segmentation fault ; killed by signal ;
    outputs differ from eager on the second input ; 在第二个输入上，输出与 eager 不同 ; not timed: running it again failed ;
    未计时：再次运行时出错 ; （未计时 ; a Dynamo limitation: the model runs eagerly ; eager 给出 ;
    does not match eager ; not match eager ; did not match eager ; path failed ; 路径失败 ; was never checked ;
    untimed row ; untimed ;
    Could not guard on data-dependent expression ; guard on data-dependent ; symbolically traced variables ;
    TorchMlirCompilerError ; got a model whose lowering ; failed, blocked by ; stage linalg-on-tensors ; stage torch ;
    Higher-order operation ; explicitly marked illegal ; iree-compile ; Error invoking IREE compiler tool ;
    Proxy object cannot be iterated ; Dynamic control flow is not supported ; Tensor-likes are not close! ;
    Greatest absolute difference ; Trace had nondeterministic nodes ; 卡在 torch ; 下降到 ;
    the trace baked in one branch: outputs differ from eager on the second input ; the trace baked in one branch: ;
    trace 把一个分支固化进了计算图： ; trace 把一个分支固化进了计算图：在第二个输入上，输出与 eager 不同 ;
    TraceError: symbolically traced variables cannot be used as inputs to control flow ;
    symbolically traced variables cannot be used as inputs to control flow ;
    GuardOnDataDependentSymNode: Could not guard on data-dependent expression ;
    GuardOnDataDependentSymNode: Could not guard ; Could not guard on data-dependent expression Eq(u0, 1) ;
    lowering to 'torch' failed ; a model whose lowering to 'torch' failed ; Higher-order operation 'cond' ;
    NotImplementedError: Higher-order operation ; .numpy() is not supported ; certain side effects ;
    captured, but running it failed: RuntimeError ; Graphs differed across invocations ;
    Output nr 1. of the traced function does not match the corresponding output of the Python function ;
    Using len to get tensor shape might cause the trace to be incorrect ;
    torch.tensor results are registered as constants in the trace ; NotSupportedError: ; CalledProcessError ;
    JITException ; MissingOperatorWithoutDecomp ; UnsupportedAliasMutationException ; MLIRError
""".split(";")]
#: (the last lines: heads compare_capture builds in f-strings from its own constants, and whole reasons and
#: errors the notebooks print for a path)
_WORD = re.compile(r"[A-Za-z][A-Za-z'_\-]*[A-Za-z]|[A-Za-z]")
_HAN = re.compile(r"[\u4e00-\u9fff]+")


def _tree(path: Path) -> ast.Module:
    """One Python file, parsed (an empty module for a file that cannot be read or parsed)."""
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return ast.Module(body=[], type_ignores=[])


def _literals(tree: ast.Module) -> list[str]:
    """The message-like string literals of one parsed file (13 to 599 characters with a space, or any with 中文:
    "捕获成功，但运行它时出错：" has no space)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 600 \
                and node.value.count("\n") <= 20 and (" " in node.value and len(node.value) > 12 or _HAN.search(node.value)):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):  # an f-string: its fixed parts
            found.append(" ".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)))
    return found


def _error_classes(tree: ast.Module) -> list[str]:
    """The names of the exception and warning classes one parsed file defines (GuardOnDataDependentSymNode …)."""
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and (re.search(r"(Error|Exception|Warning)$", node.name) or any(
                re.search(r"(Error|Exception|Warning)$", getattr(base, "id", getattr(base, "attr", "")))
                for base in node.bases))]


def gather() -> list[str]:
    """Words and frequent word pairs of torch's messages and the library's, each graph-break type and
    each exception class torch defines there whole, each clause of the viewers' short messages, plain
    words and phrases (``PLAIN``, ``PLAIN_ZH``, ``PHRASES``), and 中文 runs of the library's messages
    (whole, and their two- to four-character pieces), sorted."""
    import torch

    import fxcourse

    root = Path(torch.__file__).parent
    texts: list[str] = []
    whole: set[str] = set()  # each graph-break type, exception class and viewer clause whole
    for part in TORCH_PARTS:
        where = root / part
        for path in sorted([where] if where.is_file() else where.rglob("*.py")):
            tree = _tree(path)  # parsed once for both
            texts += _literals(tree)
            whole.update(_error_classes(tree))
    # and the exception classes of the MLIR paths' packages (TorchMlirCompilerError, CompilerToolError …)
    for package in ("torch_mlir", "iree"):
        spec = importlib.util.find_spec(package)
        for where in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(where).rglob("*.py")):
                whole.update(_error_classes(_tree(path)))
    registry = root / "_dynamo" / "graph_break_registry.json"
    if registry.is_file():
        for entries in json.loads(registry.read_text(encoding="utf-8")).values():
            for entry in entries:
                texts += [entry.get("Gb_type", ""), entry.get("Explanation", ""), *entry.get("Hints", [])]
                whole.add(entry.get("Gb_type", ""))
    own = [text for path in sorted(Path(fxcourse.__file__).parent.rglob("*.py")) for text in _literals(_tree(path))]
    # each clause of compare_capture's own short messages (what a reason says: "captured, but running it failed",
    # "recorded only the path …")
    for path in sorted((Path(fxcourse.__file__).parent / "viewers").glob("*.py")):
        for text in _literals(_tree(path)):
            if len(text) < 160 and "\n" not in text and "{" not in text:
                whole.update(part.strip() for part in re.split(r"[:;()（）：；]", text) if len(part.strip()) > 8)
    words: set[str] = set()
    pairs: collections.Counter[str] = collections.Counter()
    for text in texts + own:
        found = _WORD.findall(text)
        words.update(found)
        pairs.update(" ".join(pair) for pair in zip(found, found[1:]))
    han: set[str] = set()
    for text in own:
        for run in _HAN.findall(text):
            han.add(run)
            han.update(run[i:i + n] for n in (2, 3, 4) for i in range(len(run) - n + 1))
    plain = {form for word in PLAIN for form in (word, word.capitalize(), word.upper())} | set(PLAIN_ZH) | set(PHRASES)
    return sorted(words | {pair for pair, count in pairs.items() if count >= 3} | han | plain | whole - {""})


def main(argv: list[str] | None = None) -> int:
    words = gather()
    WORDS.write_text(json.dumps(words, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(words)} words and phrases written to {WORDS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
