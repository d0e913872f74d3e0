"""``POST /claims/check`` on a running library service: the common checker with the
library's MiniLM ("combined"), internal token required, malformed / hostile /
oversized bodies refused with a 4xx and a message; and the survey worker's
checker (services/worker/survey/support.py) using it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session, sessionmaker

from services.library.routes.claims import MAX_BODY_BYTES, MAX_ITEMS
from services.worker.survey.support import ClaimChecker, check_section
from services.worker.tools.ports import LibraryEndpoint
from tests.conftest import Stack
from tests.fixtures.library_services import library_services
from tests.library.conftest import TOKEN, LibraryService, make_user

PASSAGE = (
    "We assess the importance of an in-domain scientific vocabulary by repeating the "
    "finetuning experiments for SCIBERT. Averaged across datasets, we observe +0.60 F1 "
    "when using SCIVOCAB."
)
SUPPORTED = "An in-domain scientific vocabulary adds 0.60 F1 averaged across datasets."
UNRELATED = "Quantum annealing answers every literature question."


@pytest.fixture(scope="module")
def service(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory, isolated_redis_url: str
) -> Iterator[LibraryService]:
    base: Path = tmp_path_factory.mktemp("claims_route")
    with library_services(stack, base, isolated_redis_url) as (_, library):
        yield LibraryService(library.url)


@pytest.fixture(scope="module")
def user(session_factory: sessionmaker[Session]) -> uuid.UUID:
    return make_user(session_factory, "claims")


def _post(service: LibraryService, user: uuid.UUID, **kwargs: object) -> httpx.Response:
    return httpx.post(
        f"{service.url}/claims/check", headers=service.headers(user), timeout=60, **kwargs
    )


class TestCheck:
    def test_each_pair_gets_a_combined_verdict_with_its_checks(
        self, service: LibraryService, user: uuid.UUID
    ) -> None:
        items = [
            {"claim": SUPPORTED, "passage": PASSAGE},
            {"claim": UNRELATED, "passage": PASSAGE, "model_verdict": "supported"},
        ]
        resp = _post(service, user, json={"items": items})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["mode"] == "combined"
        good, bad = body["items"]
        assert good["supported"] is True and good["mode"] == "combined"
        names = [c["name"] for c in good["checks"]]
        assert names == ["lexical", "embedding", "numbers", "terms"]
        assert bad["supported"] is False and "shares no content word" in bad["reason"]
        assert 0.0 <= bad["score"] < good["score"] <= 1.0

    def test_lexical_only_is_asked_for_and_said(
        self, service: LibraryService, user: uuid.UUID
    ) -> None:
        body = {"items": [{"claim": SUPPORTED, "passage": PASSAGE}], "lexical_only": True}
        resp = _post(service, user, json=body)
        assert resp.status_code == 200 and resp.json()["mode"] == "lexical-only"
        assert "embedding" not in [c["name"] for c in resp.json()["items"][0]["checks"]]

    def test_the_worker_checker_uses_the_library_embedder(
        self, service: LibraryService, user: uuid.UUID
    ) -> None:
        checker = ClaimChecker(LibraryEndpoint(service.url, TOKEN), str(user))
        (support,) = check_section([(SUPPORTED, {"a": [PASSAGE]}, "supported")], checker)
        assert support["mode"] == "combined" and support["fallback"] is None
        assert support["supported"] and support["citations"]["a"]["checks"]["embedding"]


class TestRefused:
    def test_without_the_internal_token_it_is_401(self, service: LibraryService) -> None:
        body = {"items": [{"claim": SUPPORTED, "passage": PASSAGE}]}
        resp = httpx.post(f"{service.url}/claims/check", json=body, timeout=30)
        assert resp.status_code == 401

    @pytest.mark.parametrize(
        "content",
        [
            b"not json",
            b"[1, 2]",
            b'{"items": []}',
            b'{"items": [{"claim": "x"}]}',
            b'{"items": [{"claim": 3, "passage": "y"}]}',
            b'{"items": [{"claim": "x", "passage": "y", "extra": 1}]}',
            b'{"items": [{"claim": "x", "passage": "y", "model_verdict": "maybe"}]}',
            b'{"items": [{"claim": "", "passage": "y"}]}',
            b"\xff\xfe",
            b"[" * 50_000,
        ],
    )
    def test_malformed_bodies_get_a_422_with_a_message(
        self, service: LibraryService, user: uuid.UUID, content: bytes
    ) -> None:
        resp = _post(service, user, content=content)
        assert resp.status_code == 422, resp.text
        assert resp.json()["error"]["code"] == "invalid_request"
        assert resp.json()["error"]["message"]

    def test_too_many_pairs_or_a_too_long_field_is_422(
        self, service: LibraryService, user: uuid.UUID
    ) -> None:
        many = {"items": [{"claim": "x", "passage": "y"}] * (MAX_ITEMS + 1)}
        assert _post(service, user, json=many).status_code == 422
        long = {"items": [{"claim": "x" * 5000, "passage": "y"}]}
        resp = _post(service, user, json=long)
        assert resp.status_code == 422 and "claim" in resp.json()["error"]["message"]

    def test_an_oversized_body_is_413_declared_or_streamed(
        self, service: LibraryService, user: uuid.UUID
    ) -> None:
        big = b'{"items": [{"claim": "x", "passage": "' + b"y" * MAX_BODY_BYTES + b'"}]}'
        resp = _post(service, user, content=big)
        assert resp.status_code == 413 and resp.json()["error"]["code"] == "too_large"

        def chunks() -> Iterator[bytes]:
            yield big[: len(big) // 2]
            yield big[len(big) // 2 :]

        resp = _post(service, user, content=chunks())
        assert resp.status_code == 413
