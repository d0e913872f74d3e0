"""The bounds sent with a survey stage's schema fit its reply's tokens, counted by the
real server's own tokenizer (llama-cpp-python's ``/extras/tokenize``).

The largest reply a bounded schema admits is built (every array at ``maxItems``,
every string at ``maxLength`` of plain English prose, every enum at its longest
value) and tokenized: it must fit ``max_tokens``, or a grammar-decoding server
would still cut the reply inside a string, which is what failed surveys here.

Text that is not prose (a passage's table of figures, copied into a note: this
tokenizer spends a token on each digit) overflows bounds sized for prose — a
survey failed that way in CI. The repair of a cut reply is fitted to the density
the cut reply showed, and that repair must fit.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from services.worker.survey.reply_fit import fit_to_reply, repair_density
from services.worker.survey.schemas import (
    note_schema,
    outline_schema,
    plan_schema,
    section_schema,
    verify_schema,
)
from tests.fixtures.real_model import RealModelServer

PROSE = (
    "Pretrained language models improve scientific text mining: the method fine-tunes "
    "a transformer on papers from biomedicine and computer science, and the results show "
    "gains on named entity recognition, relation extraction and sentence classification. "
)
KEYS = ["beltagy2019scibert", "lo2020s2orc", "cohan2020specter"]
CHUNKS = [f"{KEYS[0]}#p{i}" for i in range(6)]


def stage_schemas(max_tokens: int) -> dict[str, dict[str, Any]]:
    """Each stage's schema as the survey builds it; verify judges one claim per
    paragraph of a section written under the same limit."""
    section = section_schema(KEYS)
    paragraphs = fit_to_reply(section, max_tokens=max_tokens)["properties"]["paragraphs"]
    return {
        "plan": plan_schema(),
        "note": note_schema(KEYS[0], CHUNKS),
        "outline": outline_schema(KEYS),
        "section": section,
        "verify": verify_schema([f"c{i + 1}" for i in range(paragraphs["maxItems"])]),
    }


# A results table as PyMuPDF gives it, copied into a note.
TABLE = "F1 91.41 88.57 (+2.84) 0.7402 86.45 12.3% 2019 1903.10676 "


def largest(schema: dict[str, Any], text_like: str = PROSE) -> Any:
    """The largest value ``schema`` admits under its bounds, free text like ``text_like``."""
    kind = schema.get("type")
    if kind == "object":
        return {name: largest(child, text_like) for name, child in schema["properties"].items()}
    if kind == "array":
        return [largest(schema["items"], text_like) for _ in range(schema["maxItems"])]
    if "enum" in schema:
        return max(schema["enum"], key=len)
    text = text_like * (1 + schema["maxLength"] // len(text_like))
    return text[: schema["maxLength"]]


def count_tokens(server: RealModelServer, text: str) -> int:
    root = server.base_url.removesuffix("/v1")
    resp = httpx.post(f"{root}/extras/tokenize", json={"input": text}, timeout=60)
    resp.raise_for_status()
    return len(resp.json()["tokens"])


@pytest.mark.parametrize("max_tokens", [128, 256, 1024, 4096])
def test_the_largest_bounded_reply_fits_its_tokens(
    real_model: RealModelServer, max_tokens: int
) -> None:
    for stage, schema in stage_schemas(max_tokens).items():
        bounded = fit_to_reply(schema, max_tokens=max_tokens)
        reply = json.dumps(largest(bounded), indent=1)
        used = count_tokens(real_model, reply)
        assert used <= max_tokens, (stage, used, max_tokens, reply[:500])


@pytest.mark.parametrize("max_tokens", [256, 1024])
def test_a_repair_after_a_cut_fits_text_that_is_not_prose(
    real_model: RealModelServer, max_tokens: int
) -> None:
    schema = note_schema(KEYS[0], CHUNKS)
    first = json.dumps(largest(fit_to_reply(schema, max_tokens=max_tokens), TABLE), indent=1)
    used = count_tokens(real_model, first)
    # The hazard is real here: figures overflow bounds sized for prose ...
    assert used > max_tokens, (used, max_tokens)
    # ... and the server would have cut that reply at its limit.
    cut = first[: len(first) * max_tokens // used]
    density = repair_density(cut, max_tokens)
    bounded = fit_to_reply(schema, max_tokens=max_tokens, chars_per_token=density)
    repair = json.dumps(largest(bounded, TABLE), indent=1)
    assert count_tokens(real_model, repair) <= max_tokens, (density, repair[:300])
