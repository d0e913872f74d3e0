"""Secret redaction and size caps for span data, applied before any sink sees it.

:class:`RedactingSpanExporter` wraps each sink's exporter, so the Postgres
table and the OTLP collector both receive the same cleaned spans, and the work
happens on the export thread rather than in the instrumented code.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import Link, Status
from opentelemetry.util.types import AttributeValue

from services.common.metrics.definitions import SPANS_REDACTION_FAILED

log = logging.getLogger(__name__)

REDACTED = "[REDACTED]"

# What users search for is theirs: query strings never leave the process
# (``url.query`` is dropped, the query part of full URLs cut), whatever
# instrumentation put them on a span.
_QUERY_KEYS = frozenset({"url.query", "http.query"})
_URL_KEYS = frozenset({"url.full", "http.url", "http.target"})

# Each rule: the fragments (lower-cased) that any match must contain, the
# pattern, and its replacement. The replacement keeps a recognisable prefix so
# a reader still sees *what kind* of secret was there, never the secret. A rule
# runs only when one of its fragments occurs: plain substring tests run in C,
# so an ordinary string costs about a microsecond instead of a dozen scans.
_RULES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    (
        ("private key",),
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
        "-----BEGIN PRIVATE KEY-----" + REDACTED,
    ),
    # Whole Authorization header values, whatever the scheme.
    (
        ("authorization",),
        re.compile(r"(?i)(\bauthorization[\"']?\s*[:=]\s*[\"']?)(?!\[REDACTED\])[^\r\n\"']+"),
        r"\1" + REDACTED,
    ),
    (
        ("bearer",),
        re.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=\-]{16,}"),
        r"\1\2" + REDACTED,
    ),
    # Basic credentials are base64: demand a digit or +/= so prose is left alone.
    (
        ("basic",),
        re.compile(r"(?i)\b(basic)(\s+)(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2}"),
        r"\1\2" + REDACTED,
    ),
    (("lf_",), re.compile(r"\b(lf_)[A-Za-z0-9_\-]{8,}"), r"\1" + REDACTED),
    (("sk-",), re.compile(r"\b(sk-)[A-Za-z0-9_\-]{8,}"), r"\1" + REDACTED),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(gh[pousr]_|github_pat_)[A-Za-z0-9_]{16,}"),
        r"\1" + REDACTED,
    ),
    (("xox",), re.compile(r"\b(xox[abposr]-)[A-Za-z0-9\-]{8,}"), r"\1" + REDACTED),
    (("aiza",), re.compile(r"\b(AIza)[0-9A-Za-z_\-]{30,}"), r"\1" + REDACTED),
    (
        ("akia", "asia", "agpa", "aida", "aroa"),
        re.compile(r"\b((?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{4})[0-9A-Z]{12}\b"),
        r"\1" + REDACTED,
    ),
    (
        ("eyj",),
        re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"),
        REDACTED,
    ),
    # key=value / key: value / "key": "value" for secret-looking keys.
    (
        ("password", "passwd", "pwd", "secret", "key", "token", "credential"),
        re.compile(
            r"(?i)((?:password|passwd|pwd|secret|api[_\-]?key|access[_\-]?key|"
            r"private[_\-]?key|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|"
            r"client[_\-]?secret|credentials?)[\"']?\s*[:=]\s*[\"']?)([^\s\"'&,;}]+)"
        ),
        r"\1" + REDACTED,
    ),
    # Credentials inside URLs: scheme://user:password@host
    (
        ("://",),
        re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+@"),
        r"\1" + REDACTED + "@",
    ),
)

# Attribute keys whose whole value is a secret (header dumps, config echoes).
_SECRET_KEY = re.compile(
    r"(?i)(^|[._\-])(password|passwd|secret|api[_\-]?key|authorization|cookie|set[_\-]cookie|"
    r"token|access[_\-]?token|refresh[_\-]?token|private[_\-]?key|credentials?)$"
)


# Values that cannot hold a secret: exactly these types (a subclass takes the long way).
_NUMBERS = frozenset({int, float, bool})

# No pattern matches fewer characters than this ("pwd=x" is the shortest).
_SHORTEST_SECRET = 5


@lru_cache(maxsize=4096)
def _is_secret_key(key: str) -> bool:
    # Attribute keys repeat endlessly (a few hundred distinct ones): cache the verdict.
    return _SECRET_KEY.search(key) is not None


def _redact_uncached(text: str) -> str:
    lowered = text.lower()
    for fragments, pattern, replacement in _RULES:
        for fragment in fragments:
            if fragment in lowered:
                text = pattern.sub(replacement, text)
                break
    return text


# Short attribute values repeat endlessly (model, tool and status names), so
# their verdicts are cached; long ones (payload previews) are scanned each time.
_redact_short = lru_cache(maxsize=8192)(_redact_uncached)
_CACHE_MAX_CHARS = 128


def redact_text(text: str) -> str:
    """``text`` with every recognised secret replaced by a marker."""
    if len(text) < _SHORTEST_SECRET:
        return text
    if len(text) <= _CACHE_MAX_CHARS:
        return _redact_short(text)
    return _redact_uncached(text)


@dataclass(frozen=True)
class RedactionPolicy:
    """How span data is cleaned: secrets always; size only without full capture."""

    full_capture: bool = False
    preview_chars: int = 1024
    max_events: int = 128

    def clean_string(self, key: str, value: str, out: dict[str, AttributeValue]) -> None:
        """Write the redacted (and, if long, capped) ``value`` under ``key`` into ``out``."""
        value = redact_text(value.replace("\x00", ""))
        if self.full_capture or len(value) <= self.preview_chars:
            out[key] = value
            return
        # Preview + length + hash: enough to recognise and compare payloads
        # without storing megabytes of prompt text in every sink.
        out[key] = value[: self.preview_chars] + "…"
        out.setdefault(f"{key}.length", len(value))
        out.setdefault(f"{key}.sha256", hashlib.sha256(value.encode()).hexdigest())

    def clean_attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, AttributeValue]:
        """A cleaned copy of ``attributes`` (never mutates the span's own mapping)."""
        out: dict[str, AttributeValue] = {}
        for key, value in (attributes or {}).items():
            if type(value) in _NUMBERS and key not in _QUERY_KEYS:
                # Most values: nothing to redact, and an exact type test costs
                # a fraction of the Sequence check below (an ABC's).
                out[key] = value
                continue
            if key in _QUERY_KEYS:
                continue
            if key in _URL_KEYS and isinstance(value, str):
                value = value.split("?", 1)[0]
            if isinstance(value, str) and _is_secret_key(key):
                out[key] = REDACTED
            elif isinstance(value, str):
                self.clean_string(key, value, out)
            elif isinstance(value, Sequence) and not isinstance(value, bytes):
                out[key] = [self._clean_item(v) for v in value]
            else:
                out[key] = value
        return out

    def _clean_item(self, item: Any) -> Any:
        if not isinstance(item, str):
            return item
        item = redact_text(item.replace("\x00", ""))
        if not self.full_capture and len(item) > self.preview_chars:
            return item[: self.preview_chars] + "…"
        return item

    def clean_text(self, text: str) -> str:
        """Free text (a status description) cleaned like a string attribute."""
        out: dict[str, AttributeValue] = {}
        self.clean_string("text", text, out)
        return str(out["text"])

    def clean_span(self, span: ReadableSpan) -> ReadableSpan:
        """A copy of ``span`` with attributes, events, links and status message cleaned.

        Error text (status descriptions, exception events) often quotes the
        failing input, so it gets the same redaction and size cap as attributes.
        """
        events = [
            Event(
                name=event.name,
                attributes=self.clean_attributes(event.attributes),
                timestamp=event.timestamp,
            )
            for event in list(span.events)[: self.max_events]
        ]
        status = span.status
        if status.description:
            status = Status(status.status_code, self.clean_text(status.description))
        links = [Link(link.context, self.clean_attributes(link.attributes)) for link in span.links]
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=self.clean_attributes(span.attributes),
            events=events,
            links=links,
            kind=span.kind,
            status=status,
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )


def redact_batch(
    policy: RedactionPolicy, spans: Sequence[ReadableSpan], *, sinks: Sequence[str]
) -> tuple[list[ReadableSpan], int]:
    """The cleaned spans of a batch, and how many could not be cleaned (dropped).

    A span whose cleaning fails is dropped (never sent uncleaned), logged and
    counted in ``leaflab_spans_redaction_failed_total`` for each of ``sinks``
    (the sinks that will not receive it).
    """
    cleaned: list[ReadableSpan] = []
    failed: list[str] = []
    for span in spans:
        try:
            cleaned.append(policy.clean_span(span))
        except Exception as exc:  # a malformed span must not take its batch down
            failed.append(f"{span.name!r} ({type(exc).__name__})")
    if failed:
        for sink in sinks:
            SPANS_REDACTION_FAILED.labels(sink=sink).inc(len(failed))
        # Names and error types only: the span's content is what failed to clean.
        log.error(
            "span sink %s: dropped %d span(s) that could not be redacted: %s",
            ", ".join(sinks),
            len(failed),
            ", ".join(failed[:10]),
        )
    return cleaned, len(failed)


class RedactingSpanExporter(SpanExporter):
    """Cleans every span, then hands the batch to the wrapped sink.

    A span whose cleaning fails is dropped (never sent uncleaned), logged and
    counted in ``leaflab_spans_redaction_failed_total{sink}``; the rest of its
    batch is still exported.
    """

    def __init__(self, inner: SpanExporter, policy: RedactionPolicy, *, sink: str = "") -> None:
        self.inner = inner
        self.policy = policy
        self.sink = sink or type(inner).__name__
        # Spans of the last batch dropped here, so the sink guard counts only what it wrote.
        self.dropped_last = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        cleaned, failed = redact_batch(self.policy, spans, sinks=(self.sink,))
        self.dropped_last = failed
        if failed and not cleaned:
            return SpanExportResult.SUCCESS  # the sink is fine: nothing to send
        return self.inner.export(cleaned)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)
