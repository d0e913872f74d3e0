"""Where the span exporter process spends its CPU, per span and per stage.

Run:  PYTHONPATH=$PWD .venv/bin/python -m bench.span_export_stages [--spans 8000] [--rounds 3]

The spans are the end-to-end benchmark's (bench/tracing_overhead.py: 15
model-call attributes, tool arguments with a bearer token and a URL), made by
a real TracerProvider, in batches of 512 as the hand-off sends them. Each stage
runs alone over all of them, ``time.process_time`` around it, best of
``--rounds``: the traced process's encoding (tuples + marshal), then in the
exporter the decoding (unmarshal + rebuild the SDK spans), redaction, the
Postgres rows (built, and their JSON as psycopg dumps it for COPY) and the
OTLP request body — by the SDK's encoder (the baseline, what main sends) and by
Leaflab's (otlp_encoding.py), whose bytes are checked equal to the SDK's first.
No database, no network: the CPU of Leaflab's code and the libraries it calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from bench.tracing_overhead import make_spans  # noqa: E402
from services.common.telemetry import span_wire  # noqa: E402
from services.common.telemetry.otlp_encoding import encode_request  # noqa: E402
from services.common.telemetry.postgres_sink import copy_rows  # noqa: E402
from services.common.telemetry.redaction import RedactionPolicy, redact_batch  # noqa: E402

BATCH = 512


def _batches(items: Sequence[Any]) -> list[Sequence[Any]]:
    return [items[i : i + BATCH] for i in range(0, len(items), BATCH)]


def _best_us(stage: Callable[[], object], spans: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        stage()
        best = min(best, time.process_time() - started)
    return best / spans * 1e6


def _frames(batches: list[Sequence[ReadableSpan]]) -> list[bytes]:
    out = []
    for batch in batches:
        encoder = span_wire.BatchEncoder()
        for span in batch:
            encoder.add(span)
        out.append(span_wire.frame(encoder.message()))
    return out


def _decode(frames: list[bytes]) -> list[list[ReadableSpan]]:
    decoder = span_wire.BatchDecoder()
    return [decoder.spans(span_wire.unframe(f[span_wire.HEADER_SIZE :])[1]) for f in frames]


def _redact(batches: list[list[ReadableSpan]]) -> list[list[ReadableSpan]]:
    policy = RedactionPolicy()
    return [redact_batch(policy, batch, sinks=("bench",))[0] for batch in batches]


def _rows(batches: list[list[ReadableSpan]]) -> None:
    for batch in batches:
        for row in copy_rows(batch):
            json.dumps(row[-2].obj)  # what psycopg's Jsonb dumper does at COPY time
            json.dumps(row[-1].obj)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, rounds = args.spans, args.rounds
    print(f"load average {os.getloadavg()[0]:.2f}")
    batches = _batches(make_spans(n))
    frames = _frames(batches)
    decoded = _decode(frames)
    cleaned = _redact(decoded)
    for batch in cleaned:  # the new encoder must send what the SDK's sends
        assert encode_request(batch) == encode_spans(batch).SerializePartialToString()
    stages = {
        "traced process: tuples + marshal": lambda: _frames(batches),
        "exporter: unmarshal + rebuild SDK spans": lambda: _decode(frames),
        "exporter: redaction": lambda: _redact(decoded),
        "exporter: Postgres rows + their JSON": lambda: _rows(cleaned),
        "exporter: OTLP body, SDK encoder (baseline)": lambda: [
            encode_spans(b).SerializePartialToString() for b in cleaned
        ],
        "exporter: OTLP body, otlp_encoding": lambda: [encode_request(b) for b in cleaned],
    }
    for name, stage in stages.items():
        print(f"{name:<46} {_best_us(stage, n, rounds):6.1f} µs/span")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
