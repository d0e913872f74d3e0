"""Benchmark context compression: tokens saved per layer, and CPU per model call.

Run: .venv/bin/python -m bench.context_compression [--quick]
Figures (one JSON line at the end):
- ``session``: the long scripted session of tests/worker/context (13 rounds of
  ~1,000-token file reads and ~400-token assistant texts, 5,000-token input
  budget) replayed through the view builder with a fixed summary text: tokens
  removed by each layer summed over all model calls, and the tokens the model
  was sent in all versus the uncompressed history (the baseline).
- ``cpu_200_messages``: CPU time per model call at 200 messages of history
  (100 tool rounds): building the compressed view (history → chat format →
  layers → digest recorded in the ledger) versus the baseline of building the
  uncompressed chat-format view the runtime built before (goal ≤ 2 ms).
``--quick`` shrinks the repeat counts so a test can check that it runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from collections import defaultdict
from typing import Any

from services.common.models import Message
from services.worker.context.view import Budget, RecordedSummary, build_view
from services.worker.llm.token_estimate import view_tokens
from services.worker.spine.conversation import to_model_messages

SESSION_BUDGET = Budget(input_tokens=5000, truncate_primary_chars=1500, truncate_all_chars=800)
SYSTEM = "You are Leaflab. " * 70  # about the size of the assembled prompt
PLAN = "aabcdefghijab"


def _file(name: str, lines: int = 30) -> str:
    return "".join(f"{i:6d}\t{name}-line {i} " + "x" * 80 + "\n" for i in range(1, lines + 1))


def _append_round(base: list[dict[str, Any]], n: int, name: str, thinking: bool) -> None:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    text = "Thinking about the next step. " * 40 if thinking else None
    base.append({"role": "assistant", "content": text, "tool_calls": [call]})
    base.append({"role": "tool", "tool_call_id": f"c{n}", "content": _file(name)})


def session_figures() -> dict[str, Any]:
    system = {"role": "system", "content": SYSTEM}
    base: list[dict[str, Any]] = [{"role": "user", "content": "Read the files and report."}]
    summaries: list[RecordedSummary] = []
    saved: dict[str, int] = defaultdict(int)
    fired: dict[str, int] = defaultdict(int)
    sent = uncompressed = 0
    for r, name in enumerate([*PLAN, None]):
        view = build_view(
            system=system, base=base, summaries=summaries, round_no=r, budget=SESSION_BUDGET
        )
        if view.wants_summary is not None:
            text = "Summary: files were read; nothing else happened. " * 4
            summaries.append(RecordedSummary(r, text, view.wants_summary.covers))
            view = build_view(
                system=system, base=base, summaries=summaries, round_no=r, budget=SESSION_BUDGET
            )
        for layer in view.layers:
            saved[layer.layer] += layer.before_tokens - layer.after_tokens
            fired[layer.layer] += 1
        sent += view.tokens_after
        uncompressed += view.tokens_before
        if name is not None:
            _append_round(base, r, name, thinking=r >= 2)
    return {
        "model_calls": len(PLAN) + 1,
        "summaries": len(summaries),
        "tokens_saved_per_layer": dict(saved),
        "layer_fired_calls": dict(fired),
        "tokens_sent": sent,
        "baseline_tokens_uncompressed": uncompressed,
        "saved_share": round(1 - sent / uncompressed, 3),
    }


def _history(messages: int) -> list[Message]:
    session, job = uuid.uuid4(), uuid.uuid4()
    rows = [Message(session_id=session, job_id=job, seq=1, role="user", content="Survey X.")]
    n = 0
    while len(rows) < messages:
        call = {"id": f"c{n}", "name": "read_file", "arguments": json.dumps({"path": f"{n}.txt"})}
        rows.append(
            Message(
                session_id=session,
                job_id=job,
                seq=len(rows) + 1,
                role="assistant",
                content="Next I read another file.",
                tool_calls=[call],
            )
        )
        rows.append(
            Message(
                session_id=session,
                job_id=job,
                seq=len(rows) + 1,
                role="tool",
                content=_file(f"f{n % 7}", 10 + n % 30),
                tool_call_id=f"c{n}",
                name="read_file",
            )
        )
        n += 1
    return rows[:messages]


def _cpu_ms(fn: Any, repeats: int) -> dict[str, float]:
    times = []
    for _ in range(repeats):
        start = time.process_time_ns()
        fn()
        times.append((time.process_time_ns() - start) / 1e6)
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(len(times) * 0.95) - 1], 3),
    }


def cpu_figures(messages: int, repeats: int) -> dict[str, Any]:
    history = _history(messages)
    # A budget the history overflows, so every non-LLM layer runs on each call
    # (a summary already recorded covers the oldest quarter, as in a long job).
    budget = Budget(input_tokens=view_tokens(to_model_messages(SYSTEM, history)[1:]) // 2)
    covers = messages // 4
    while history[covers].role != "assistant":
        covers += 1
    summary = [RecordedSummary(0, "Summary of the first files. " * 20, covers)]

    def baseline() -> None:
        to_model_messages(SYSTEM, history)

    def compressed() -> None:
        full = to_model_messages(SYSTEM, history)
        view = build_view(
            system=full[0], base=full[1:], summaries=summary, round_no=1, budget=budget
        )
        view.digest()

    probe = to_model_messages(SYSTEM, history)
    layers = build_view(
        system=probe[0], base=probe[1:], summaries=summary, round_no=1, budget=budget
    ).layers
    baseline()
    compressed()  # warm-up
    return {
        "messages": messages,
        "layers_applied": [layer.layer for layer in layers],
        "compressed_view": _cpu_ms(compressed, repeats),
        "baseline_uncompressed_view": _cpu_ms(baseline, repeats),
        "goal_ms": 2.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    figures = {
        "session": session_figures(),
        "cpu_200_messages": cpu_figures(200, 20 if args.quick else 500),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
