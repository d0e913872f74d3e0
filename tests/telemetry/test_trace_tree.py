"""The pure tree rendering behind `leaflab trace`."""

from __future__ import annotations

from services.cli.trace_cmd import render_trace_tree


def _span(
    span_id: str, parent: str | None, name: str, start: float, end: float, **attrs: object
) -> dict[str, object]:
    return {
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "start": start,
        "end": end,
        "status": attrs.pop("status", "UNSET"),
        "status_message": attrs.pop("status_message", None),
        "attributes": attrs,
    }


class TestRenderTraceTree:
    def test_tree_durations_tokens_cost_and_totals(self) -> None:
        spans = [
            _span(
                "c",
                "b",
                "chat qwen",
                1.0,
                1.5,
                **{
                    "gen_ai.usage.input_tokens": 1200,
                    "gen_ai.usage.output_tokens": 80,
                    "leaflab.cached_tokens": 1000,
                    "leaflab.cost_usd": 0.0021,
                },
            ),
            _span("a", None, "job", 0.0, 130.0),
            _span("b", "a", "agent.round", 0.5, 3.0),
            _span(
                "d", "b", "execute_tool python", 1.6, 2.9, status="ERROR", status_message="timeout"
            ),
            _span("e", "a", "agent.round", 3.0, 4.0),
        ]
        assert render_trace_tree(spans).splitlines() == [
            "job  2 m 10 s",
            "├─ agent.round  2.50 s",
            "│  ├─ chat qwen  500.0 ms  tokens 1200→80, 1000 cached  $0.002100",
            "│  └─ execute_tool python  1.30 s  ERROR timeout",
            "└─ agent.round  1.00 s",
            "5 spans; tokens in 1200, out 80; cost $0.002100",
        ]

    def test_orphans_become_roots_and_iso_times_work(self) -> None:
        spans = [
            {
                "span_id": "x",
                "parent_span_id": "missing",
                "name": "sandbox.exec",
                "start": "2026-01-01T00:00:00+00:00",
                "end": "2026-01-01T00:00:00.250000+00:00",
                "status": "OK",
                "attributes": {},
            },
        ]
        assert render_trace_tree(spans).splitlines()[0] == "sandbox.exec  250.0 ms"

    def test_empty(self) -> None:
        assert render_trace_tree([]) == "(no spans recorded yet)"
