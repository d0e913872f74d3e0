"""Benchmark the workspace file tools against plain baselines measured in the same run.

Run: .venv/bin/python bench/tools_files.py [--quick]
Figures:
- grep over a synthetic tree: the tool (confined walk, binary sniff, regex
  calls with a timeout) vs a bare ``re`` loop over the same files (no guards).
- read_file's first window of a large file vs reading the whole file as text.
- a catastrophic regex: how soon grep gives up vs how long bare ``re`` needs
  for the same pattern on shorter inputs (its cost grows ~1.6x per character).
- one giant line (3 MB, the needle at its end): grep searches only a line's
  head, vs bare ``re`` over the whole line (moved from tests/worker/tools).
``--quick`` shrinks every size so a test can check that the benchmark runs.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.worker.tools.base import ToolContext
from services.worker.tools.files.grepping import GrepTool
from services.worker.tools.files.reading import ReadFileTool


@dataclass(frozen=True)
class Sizes:
    files: int
    lines: int
    big_lines: int
    redos_inputs: tuple[int, ...]
    giant_line: int


FULL = Sizes(
    files=400, lines=250, big_lines=1_000_000, redos_inputs=(22, 24, 26), giant_line=3_000_000
)
QUICK = Sizes(files=20, lines=50, big_lines=20_000, redos_inputs=(16,), giant_line=100_000)


def build_tree(root: Path, sizes: Sizes) -> None:
    for i in range(sizes.files):
        folder = root / f"pkg{i % 20}"
        folder.mkdir(exist_ok=True)
        body = "".join(
            f"def f{i}_{n}(x):  # {'TODO ' if (i * sizes.lines + n) % 997 == 0 else ''}line {n}\n"
            for n in range(sizes.lines)
        )
        (folder / f"mod{i}.py").write_text(body)


def context(root: Path) -> ToolContext:
    return ToolContext("bench", None, "bench", None, root, "c", "k", lambda _k, _p: None)


def best_of(runs: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def bench_grep(root: Path, sizes: Sizes) -> None:
    tool, ctx = GrepTool(), context(root)
    args = tool.parse({"pattern": r"TODO\s+line", "max_results": 1000})
    per_line = tool.parse({"pattern": r"TODO\s+line(?=\s)", "max_results": 1000})
    hits = tool.run(args, ctx).data["matches"]
    rx = re.compile(r"TODO\s+line")

    def bare() -> int:
        found = 0
        for path in sorted(root.rglob("*.py")):
            for line in path.read_text().splitlines():
                found += bool(rx.search(line))
        return found

    t_tool = best_of(3, lambda: tool.run(args, ctx))
    t_line = best_of(3, lambda: tool.run(per_line, ctx))
    t_bare = best_of(3, bare)
    lines = sizes.files * sizes.lines
    print(f"grep {sizes.files} files / {lines} lines, {hits} hits:")
    print(f"  tool {t_tool * 1000:.0f} ms ({lines / t_tool / 1e6:.2f} M lines/s)")
    print(f"  tool, lookahead pattern (per-line only) {t_line * 1000:.0f} ms")
    print(f"  bare re baseline {t_bare * 1000:.0f} ms ({lines / t_bare / 1e6:.2f} M lines/s)")
    print(f"  overhead x{t_tool / t_bare:.2f}")


def bench_read(root: Path, sizes: Sizes) -> None:
    big = root / "big.log"
    big.write_text("2024-01-01 12:00:00 INFO something happened here\n" * sizes.big_lines)
    tool, ctx = ReadFileTool(), context(root)
    args = tool.parse({"path": "big.log", "limit": 2000})
    t_tool = best_of(3, lambda: tool.run(args, ctx))
    t_bare = best_of(3, lambda: big.read_text().splitlines()[:2000])
    size_mb = big.stat().st_size / 1e6
    print(f"read_file first 2000 lines of a {size_mb:.1f} MB file:")
    print(f"  tool {t_tool * 1000:.1f} ms; whole-file read baseline {t_bare * 1000:.1f} ms")
    big.unlink()


def bench_redos(root: Path, sizes: Sizes) -> None:
    (root / "evil.txt").write_text("a" * 60 + "b\n")
    tool, ctx = GrepTool(), context(root)
    args = tool.parse({"pattern": r"(a|aa)+$", "path": "evil.txt"})
    started = time.perf_counter()
    result = tool.run(args, ctx)
    t_tool = time.perf_counter() - started
    verdict = "stopped by guard" if not result.data["complete"] else "completed"
    print(f"catastrophic (a|aa)+$ on 61 chars: tool returns in {t_tool:.2f} s ({verdict})")
    rx = re.compile(r"(a|aa)+$")
    for n in sizes.redos_inputs:
        started = time.perf_counter()
        rx.search("a" * n + "b")
        print(f"  bare re baseline, {n + 1} chars: {time.perf_counter() - started:.2f} s")


def bench_giant_line(root: Path, sizes: Sizes) -> None:
    folder = root / "giant"
    folder.mkdir()
    (folder / "blob.txt").write_text("x" * sizes.giant_line + "NEEDLE\n")
    (folder / "small.txt").write_text("NEEDLE\n")
    tool, ctx = GrepTool(), context(root)
    args = tool.parse({"pattern": "NEEDLE", "path": "giant"})
    t_tool = best_of(3, lambda: tool.run(args, ctx))
    found = tool.run(args, ctx).content.count("NEEDLE")
    rx = re.compile("NEEDLE")
    line = (folder / "blob.txt").read_text()
    t_bare = best_of(3, lambda: rx.search(line))
    print(f"grep, one {sizes.giant_line / 1e6:.1f} MB line + a small file ({found} hit):")
    print(f"  tool {t_tool * 1000:.1f} ms; bare re over the whole line {t_bare * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    sizes = QUICK if parser.parse_args().quick else FULL
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_tree(root, sizes)
        bench_grep(root, sizes)
        bench_read(root, sizes)
        bench_redos(root, sizes)
        bench_giant_line(root, sizes)


if __name__ == "__main__":
    main()
