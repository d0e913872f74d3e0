"""The `leaflab watch` rendering benchmark runs and reports its figures (bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench


def test_cli_watch_benchmark_prints_its_figures() -> None:
    stdout = run_bench("bench.cli_watch_render", "--quick")
    figures = last_json(stdout)
    assert figures["events"] > 200
    for view in ("plain_baseline", "rich_live"):
        assert set(figures[view]) == {"us_per_event", "events_per_cpu_s", "bytes_per_event"}
        assert figures[view]["bytes_per_event"] > 0
    assert set(figures["live_frame"]) == {"ms_per_frame", "cpu_share_at_8_fps"}
