"""``POST /claims/check``: the claim checker (services.common.claims) with the
library's own embedder, for callers that hold no model (the survey worker).

Internal: the internal token and an active X-Leaflab-User, like every library
route; nothing is read from or written to any collection. The request is
bounded before it is parsed: a body over MAX_BODY_BYTES is refused with 413
(by Content-Length, or as it streams in), more than MAX_ITEMS pairs or a field
over its length with 422, anything not of the documented shape with 422. The
answer says ``mode``: "combined" (embeddings used) or "lexical-only".
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.common.claims import check_claims
from services.common.contracts.errors import ServiceError
from services.library.access import CallerDep, RuntimeDep

router = APIRouter(tags=["claims"])

MAX_ITEMS = 200
MAX_CLAIM_CHARS = 4_000
MAX_PASSAGE_CHARS = 20_000
MAX_BODY_BYTES = 2_000_000


class ClaimPair(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str = Field(min_length=1, max_length=MAX_CLAIM_CHARS)
    passage: str = Field(max_length=MAX_PASSAGE_CHARS)
    # The model's own verdict, when there is one: it can withdraw support, never grant it.
    model_verdict: Literal["supported", "partially_supported", "unsupported"] | None = None


class ClaimCheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[ClaimPair] = Field(min_length=1, max_length=MAX_ITEMS)
    lexical_only: bool = False


async def _bounded_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
        raise ServiceError(413, "too_large", f"the body is limited to {MAX_BODY_BYTES} bytes")
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > MAX_BODY_BYTES:
            raise ServiceError(413, "too_large", f"the body is limited to {MAX_BODY_BYTES} bytes")
    return bytes(body)


def _parse(raw: bytes) -> ClaimCheckRequest:
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ServiceError(422, "invalid_request", "the body is not JSON") from None
    try:
        return ClaimCheckRequest.model_validate(data)
    except ValidationError as exc:
        msg = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ServiceError(422, "invalid_request", msg) from None


@router.post("/claims/check")
async def check(request: Request, who: CallerDep, runtime: RuntimeDep) -> dict[str, Any]:
    del who  # authorises the call; the check reads no collection
    wanted = _parse(await _bounded_body(request))
    encoder = None if wanted.lexical_only else runtime.embedder
    pairs = [(i.claim, i.passage) for i in wanted.items]
    verdicts = await asyncio.to_thread(
        check_claims,
        pairs,
        encoder=encoder,
        model_verdicts=[i.model_verdict for i in wanted.items],
    )
    return {
        "mode": "lexical-only" if encoder is None else "combined",
        "items": [v.as_dict() for v in verdicts],
    }
