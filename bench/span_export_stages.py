"""Where the span exporter process spends its CPU, per span and per stage.

Run:  PYTHONPATH=$PWD .venv/bin/python -m bench.span_export_stages [--spans 8000] [--rounds 3]

The spans are the end-to-end benchmark's (bench/tracing_overhead.py: 15
model-call attributes, tool arguments with a bearer token and a URL), made by
a real TracerProvider, in batches of 512 as the hand-off sends them. Each stage
runs alone over all of them, ``time.process_time`` around it, best of
``--rounds``: the traced process's encoding (tuples + marshal), then in the
exporter the decoding (unmarshal + rebuild the SDK spans), redaction, the
Postgres rows (built, and their JSON as psycopg dumps it for COPY) and the
Postgres rows and their COPY, and the OTLP request body two ways: by the SDK's
encoder (main's, the baseline) and by otlp_encoding.py (this branch's, whose
bytes are checked equal to the SDK's first).
The COPY runs against a scratch database (this process's CPU only, not the
server's); no network: the CPU of Leaflab's code and the libraries it calls.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from sqlalchemy import create_engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script too

from bench.scratch_stack import scratch_stack  # noqa: E402
from bench.tracing_overhead import make_spans  # noqa: E402
from services.common.telemetry import span_wire  # noqa: E402
from services.common.telemetry.otlp_encoding import encode_request  # noqa: E402
from services.common.telemetry.postgres_sink import COPY_SQL, copy_rows  # noqa: E402
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


def _copy(url: str, batches: list[list[ReadableSpan]], write: Callable[..., None]) -> None:
    """Each batch COPYed into the ``spans`` table by ``write(copy, batch)``; emptied after."""
    engine = create_engine(url)
    with engine.begin() as conn:
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        for batch in batches:
            with cursor.copy(COPY_SQL) as copy:
                write(copy, batch)
        conn.exec_driver_sql("TRUNCATE spans")
    engine.dispose()


def _write_rows(copy: Any, batch: list[ReadableSpan]) -> None:
    # As the sink does: psycopg converts each value of each row (its Jsonb dumper too).
    for row in copy_rows(batch):
        copy.write_row(row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    with scratch_stack("span_stages", redis_db=False) as scratch:
        _run(scratch.database_url, args.spans, args.rounds)
    print(f"load average {os.getloadavg()[0]:.2f}")


def _run(url: str, n: int, rounds: int) -> None:
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
        "exporter: Postgres rows + COPY": lambda: _copy(url, cleaned, _write_rows),
        "exporter: OTLP body, SDK encoder (baseline)": lambda: [
            encode_spans(b).SerializePartialToString() for b in cleaned
        ],
        "exporter: OTLP body, otlp_encoding": lambda: [encode_request(b) for b in cleaned],
    }
    for name, stage in stages.items():
        print(f"{name:<54} {_best_us(stage, n, rounds):6.1f} µs/span")


if __name__ == "__main__":
    main()
