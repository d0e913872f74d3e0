"""Benchmark the workspace file tools against plain baselines measured in the same run.

Run: .venv/bin/python bench/tools_files.py
Figures:
- grep over a synthetic tree: the tool (path walk, binary sniff, per-line regex
  with a timeout) vs a bare ``re`` loop over the same files (no guards).
- read_file first window of a 50 MB file vs reading the whole file as text.
- a catastrophic regex: how fast grep gives up vs how long bare ``re`` needs
  for the same pattern on shorter inputs (it doubles per extra character).
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

from services.worker.tools.base import ToolContext
from services.worker.tools.files.grepping import GrepTool
from services.worker.tools.files.reading import ReadFileTool

FILES, LINES = 400, 250


def build_tree(root: Path) -> None:
    for i in range(FILES):
        folder = root / f"pkg{i % 20}"
        folder.mkdir(exist_ok=True)
        body = "".join(
            f"def f{i}_{n}(x):  # {'TODO ' if (i * LINES + n) % 997 == 0 else ''}line {n}\n"
            for n in range(LINES)
        )
        (folder / f"mod{i}.py").write_text(body)


def context(root: Path) -> ToolContext:
    return ToolContext("bench", None, "bench", None, root, "c", "k", lambda _k, _p: None)


def best_of(runs: int, fn: object) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def bench_grep(root: Path) -> None:
    tool, ctx = GrepTool(), context(root)
    args = tool.parse({"pattern": r"TODO\s+line", "max_results": 1000})
    hits = tool.run(args, ctx).data["matches"]
    rx = re.compile(r"TODO\s+line")

    def bare() -> int:
        found = 0
        for path in sorted(root.rglob("*.py")):
            for line in path.read_text().splitlines():
                found += bool(rx.search(line))
        return found

    per_line = tool.parse({"pattern": r"TODO\s+line(?=\s)", "max_results": 1000})
    t_tool = best_of(3, lambda: tool.run(args, ctx))
    t_line = best_of(3, lambda: tool.run(per_line, ctx))
    t_bare = best_of(3, bare)
    lines = FILES * LINES
    print(f"grep {FILES} files / {lines} lines, {hits} hits:")
    print(f"  tool {t_tool * 1000:.0f} ms ({lines / t_tool / 1e6:.2f} M lines/s)")
    print(f"  tool, lookahead pattern (per-line only) {t_line * 1000:.0f} ms")
    print(f"  bare re baseline {t_bare * 1000:.0f} ms ({lines / t_bare / 1e6:.2f} M lines/s)")
    print(f"  overhead x{t_tool / t_bare:.2f}")


def bench_read(root: Path) -> None:
    big = root / "big.log"
    big.write_text("2024-01-01 12:00:00 INFO something happened here\n" * 1_000_000)
    tool, ctx = ReadFileTool(), context(root)
    args = tool.parse({"path": "big.log", "limit": 2000})
    t_tool = best_of(3, lambda: tool.run(args, ctx))
    t_bare = best_of(3, lambda: big.read_text().splitlines()[:2000])
    size_mb = big.stat().st_size / 1e6
    print(f"read_file first 2000 lines of a {size_mb:.0f} MB file:")
    print(f"  tool {t_tool * 1000:.1f} ms; whole-file read baseline {t_bare * 1000:.1f} ms")
    big.unlink()


def bench_redos(root: Path) -> None:
    (root / "evil.txt").write_text("a" * 60 + "b\n")
    tool, ctx = GrepTool(), context(root)
    args = tool.parse({"pattern": r"(a|aa)+$", "path": "evil.txt"})
    started = time.perf_counter()
    out = tool.run(args, ctx).content
    t_tool = time.perf_counter() - started
    print(f"catastrophic (a|aa)+$ on 61 chars: tool returns in {t_tool:.2f} s")
    print(f"  ({'stopped by guard' if 'stopped' in out else 'completed'})")
    rx = re.compile(r"(a|aa)+$")
    for n in (22, 24, 26):
        started = time.perf_counter()
        rx.search("a" * n + "b")
        print(f"  bare re baseline, {n + 1} chars: {time.perf_counter() - started:.2f} s")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_tree(root)
        bench_grep(root)
        bench_read(root)
        bench_redos(root)


if __name__ == "__main__":
    main()
