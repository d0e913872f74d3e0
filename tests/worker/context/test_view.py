"""The view builder alone: layers by share of the budget, protected rounds, summaries,
``/compact``, the local fallback, and that the same inputs always give the same view."""

from __future__ import annotations

from typing import Any

from services.worker.context.view import (
    SUMMARY_HEADER,
    Budget,
    RecordedSummary,
    SummaryRequest,
    build_view,
    local_summary,
)

SYSTEM = {"role": "system", "content": "S" * 300}
BUDGET = Budget(input_tokens=5000, truncate_primary_chars=1500, truncate_all_chars=800)


def _round(base: list[dict[str, Any]], n: int, tool: str, output: str, text: str | None) -> None:
    call = {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": "{}"}}
    base.append({"role": "assistant", "content": text, "tool_calls": [call]})
    base.append({"role": "tool", "tool_call_id": f"c{n}", "content": output})


def _history(rounds: int, *, output_chars: int = 3000, tool: str = "read_file") -> list[dict]:
    base: list[dict[str, Any]] = [{"role": "user", "content": "do the task"}]
    for n in range(rounds):
        _round(base, n, tool, f"out-{n} " + "y" * output_chars, "think " * 200 if n >= 2 else None)
    return base


class TestLayers:
    def test_below_half_the_budget_nothing_changes(self) -> None:
        base = _history(2)
        view = build_view(system=SYSTEM, base=base, summaries=[], round_no=2, budget=BUDGET)
        assert view.layers == [] and view.messages == [SYSTEM, *base]

    def test_duplicates_keep_the_newest_copy(self) -> None:
        base = _history(1)
        _round(base, 1, "read_file", base[2]["content"], None)
        for n in (2, 3):
            _round(base, n, "todo", "ok", None)
        view = build_view(
            system=SYSTEM, base=base, summaries=[], round_no=4, budget=Budget(input_tokens=3000)
        )
        assert [layer.layer for layer in view.layers][0] == "dedupe"
        assert view.messages[3]["content"].startswith("[duplicate output")
        assert view.messages[5]["content"] == base[4]["content"]

    def test_layers_fire_in_order_and_spare_the_last_two_tool_rounds(self) -> None:
        base = _history(7)
        view = build_view(system=SYSTEM, base=base, summaries=[], round_no=7, budget=BUDGET)
        names = [layer.layer for layer in view.layers]
        assert names == ["truncate_primary", "truncate_all", "placeholders"]
        assert view.messages[-1] == base[-1] and view.messages[-3] == base[-3]
        assert view.messages[3]["content"].startswith("[output of read_file (")
        assert view.tokens_after < view.tokens_before

    def test_non_primary_tools_are_cut_only_by_the_70_percent_layer(self) -> None:
        base = _history(5, tool="todo", output_chars=2000)
        view = build_view(system=SYSTEM, base=base, summaries=[], round_no=5, budget=BUDGET)
        names = [layer.layer for layer in view.layers]
        assert "truncate_primary" not in names and "truncate_all" in names


class TestSummary:
    def test_at_90_percent_a_summary_is_wanted_then_used_when_recorded(self) -> None:
        base = _history(12)
        view = build_view(system=SYSTEM, base=base, summaries=[], round_no=12, budget=BUDGET)
        assert view.wants_summary is not None
        covers = view.wants_summary.covers
        assert base[covers]["role"] == "assistant"  # never splits a tool round
        done = [RecordedSummary(round=12, content="the gist", covers=covers)]
        again = build_view(system=SYSTEM, base=base, summaries=done, round_no=12, budget=BUDGET)
        assert again.wants_summary is None and again.summary_round == 12
        assert again.messages[1]["content"] == f"{SUMMARY_HEADER}\nthe gist"
        # The newest user message is kept verbatim beside the summary.
        assert again.messages[2] == {"role": "user", "content": "do the task"}
        assert again.tokens_after < view.tokens_after

    def test_a_summary_of_a_later_round_is_ignored_when_rebuilding_an_earlier_one(self) -> None:
        base = _history(12)
        later = [RecordedSummary(round=13, content="later", covers=5)]
        view = build_view(system=SYSTEM, base=base, summaries=later, round_no=12, budget=BUDGET)
        assert view.summary_round is None

    def test_compact_forces_a_summary_below_the_threshold(self) -> None:
        base = _history(4)
        base.append({"role": "user", "content": "/compact"})
        plain = build_view(system=SYSTEM, base=base, summaries=[], round_no=0, budget=BUDGET)
        assert plain.wants_summary is None
        forced = build_view(
            system=SYSTEM, base=base, summaries=[], round_no=0, budget=BUDGET, force_summary=True
        )
        assert forced.wants_summary is not None
        # Everything before the last two tool rounds (which stay whole).
        assert forced.wants_summary.covers == 5 and base[5]["tool_calls"][0]["id"] == "c2"

    def test_local_summary_names_what_happened(self) -> None:
        base = _history(3)
        text = local_summary(SummaryRequest(covers=5, previous="before", messages=base))
        assert text.startswith("before\n(local summary")
        assert "read_file returned" in text and "user: do the task" in text


def test_the_same_inputs_always_build_the_same_view() -> None:
    base = _history(12)
    done = [RecordedSummary(round=3, content="s", covers=9)]
    digests = {
        build_view(system=SYSTEM, base=base, summaries=done, round_no=12, budget=BUDGET).digest()
        for _ in range(3)
    }
    assert len(digests) == 1
    assert base == _history(12)  # the input history itself is never modified
