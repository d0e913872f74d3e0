"""Hostile bodies and parameters get a clear 4xx with the error body, never a 500 or a drop.

Runs against a real uvicorn API (no worker: nothing here needs a job to run).
Each request is answered (a dropped connection would raise in httpx), with the
standard ``{"error": {"code", "message"}}`` body, and writes nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import transaction
from services.common.models import ApiKey, Artifact, ChatSession, Job, Message, User
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import Services

NUL = "a\x00b"
NUL_IN_PATH = "a%00b"  # httpx refuses a raw NUL in a URL; the server decodes this to one


@dataclass
class Api:
    url: str
    user: TestUser
    admin: TestUser
    session_id: str
    job_id: str


@pytest.fixture(scope="module")
def api(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
) -> Iterator[Api]:
    svc = Services(stack, tmp_path_factory.mktemp("hostile"))
    try:
        url = svc.api()
        user, admin = make_user(session_factory), make_user(session_factory, admin=True)
        client = client_for(url, user)
        session_id = client.post("/v1/sessions", json={"title": "mine"}).json()["id"]
        job_id = client.post(f"/v1/sessions/{session_id}/messages", json={"content": "hi"}).json()[
            "job_id"
        ]
        with transaction(session_factory) as db:
            db.add(
                Artifact(
                    job_id=uuid.UUID(job_id),
                    name="out/plot.png",
                    mime="image/png",
                    size=3,
                    sha256="0" * 64,
                    content=b"png",
                )
            )
        yield Api(url, user, admin, session_id, job_id)
    finally:
        svc.stop()


def _counts(factory: sessionmaker[Session]) -> tuple[int, ...]:
    with factory() as db:
        return tuple(
            int(db.scalar(select(func.count()).select_from(model)) or 0)
            for model in (User, ApiKey, ChatSession, Job, Message)
        )


def _error(resp: httpx.Response, *statuses: int) -> dict:
    assert resp.status_code in statuses, (resp.status_code, resp.text)
    body = resp.json()["error"]
    assert body["code"] and body["message"]
    return body


def _nul_requests(api: Api) -> list[tuple[str, str, dict]]:
    """(method, path, request kwargs) with a NUL byte in every kind of text field."""
    s, j, uid = api.session_id, api.job_id, str(api.user.id)
    return [
        ("POST", "/v1/sessions", {"json": {"title": NUL}}),
        ("POST", "/v1/sessions", {"json": {"project": NUL}}),
        ("POST", "/v1/sessions", {"json": {"system_prompt": NUL}}),
        ("PATCH", f"/v1/sessions/{s}", {"json": {"title": NUL}}),
        ("PATCH", f"/v1/sessions/{s}", {"json": {"system_prompt": NUL}}),
        ("POST", f"/v1/sessions/{s}/messages", {"json": {"content": NUL}}),
        ("POST", "/v1/jobs", {"json": {"kind": "turn", "input": {"content": NUL}}}),
        ("POST", "/v1/jobs", {"json": {"kind": "survey", "input": {"topic": "x" + NUL}}}),
        (
            "POST",
            "/v1/jobs",
            {"json": {"kind": "survey", "input": {"topic": "xyz", "seed_papers": [NUL]}}},
        ),
        ("POST", "/v1/jobs", {"json": {"kind": "batch", "input": {"tasks": [{"content": NUL}]}}}),
        ("POST", "/v1/jobs", {"json": {"kind": "turn", "input": {"content": "x"}, "project": NUL}}),
        (
            "POST",
            "/v1/jobs",
            {"json": {"kind": "turn", "input": {"content": "x"}, "session_id": NUL}},
        ),
        ("POST", "/v1/admin/users", {"json": {"email": f"{NUL}@lab.test"}}),
        ("POST", f"/v1/admin/users/{uid}/keys", {"json": {"name": NUL}}),
        ("POST", "/v1/admin/projects", {"json": {"name": NUL}}),
        ("GET", "/v1/jobs", {"params": {"status": NUL}}),
        ("GET", "/v1/jobs", {"params": {"kind": NUL}}),
        ("GET", f"/v1/jobs/{j}/artifacts/out%2F{NUL_IN_PATH}", {}),
        ("GET", f"/v1/jobs/{j}/artifacts/{NUL_IN_PATH}.png", {}),
        ("GET", f"/v1/traces/{NUL_IN_PATH}", {}),
        ("GET", f"/v1/jobs/{NUL_IN_PATH}", {}),
        ("GET", f"/v1/sessions/{NUL_IN_PATH}/messages", {}),
    ]


class TestNulBytes:
    def test_every_text_field_refuses_nul_with_a_4xx(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        admin = client_for(api.url, api.admin)
        before = _counts(session_factory)
        for method, path, kwargs in _nul_requests(api):
            resp = admin.request(method, path, **kwargs)
            if resp.status_code == 404 and path.startswith("/v1/sessions/"):
                continue  # the admin does not own the user's session: ask as the user
            _error(resp, 404, 422)
        user = client_for(api.url, api.user)
        for method, path, kwargs in _nul_requests(api):
            if not path.startswith("/v1/admin"):
                _error(user.request(method, path, **kwargs), 404, 422)
        assert _counts(session_factory) == before

    def test_nul_inside_the_session_id_header_path_and_query_is_answered(self, api: Api) -> None:
        user = client_for(api.url, api.user)
        _error(user.get(f"/v1/jobs/{api.job_id}/events", params={"last_event_id": NUL}), 422)
        _error(user.get(f"/v1/sessions/{api.session_id}/messages", params={"offset": NUL}), 422)


class TestWrongShapes:
    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            ("POST", "/v1/sessions", {"title": ["x"]}),
            ("POST", "/v1/sessions", {"system_prompt": {"a": 1}}),
            ("POST", "/v1/jobs", {"kind": "turn", "input": {"content": ["x"]}}),
            ("POST", "/v1/jobs", {"kind": "turn", "input": "x"}),
            ("POST", "/v1/jobs", {"kind": ["turn"], "input": {"content": "x"}}),
            ("POST", "/v1/jobs", {"kind": "survey", "input": {"topic": {"t": "xyz"}}}),
            ("POST", "/v1/jobs", {"kind": "turn", "input": {"content": "x"}, "project": [1]}),
            ("POST", "/v1/admin/users", {"email": ["a@b.c"]}),
        ],
    )
    def test_list_or_object_where_a_string_belongs_is_422(
        self, api: Api, method: str, path: str, body: object
    ) -> None:
        admin = client_for(api.url, api.admin)
        _error(admin.request(method, path, json=body), 422)

    @pytest.mark.parametrize("depth", [40, 1_000, 100_000])
    def test_deeply_nested_json_is_4xx(
        self, api: Api, session_factory: sessionmaker[Session], depth: int
    ) -> None:
        user = client_for(api.url, api.user)
        before = _counts(session_factory)
        nested = "[" * depth + "]" * depth
        for raw in (
            '{"kind": "turn", "input": {"content": "x", "deep": ' + nested + "}}",
            '{"kind": "turn", "input": {"content": ' + nested + "}}",
            '{"title": "x", "system_prompt": ' + nested + "}",
        ):
            path = "/v1/sessions" if "title" in raw else "/v1/jobs"
            resp = user.post(path, content=raw, headers={"Content-Type": "application/json"})
            _error(resp, 400, 422)
        assert _counts(session_factory) == before

    def test_nesting_within_limits_but_deep_in_a_free_form_field_is_refused(self) -> None:
        from services.api.bodies import MAX_DEPTH, RequestBody

        class Free(RequestBody):
            data: dict[str, object]

        deep: object = "x"
        for _ in range(MAX_DEPTH + 1):
            deep = [deep]
        with pytest.raises(ValueError, match="nested deeper"):
            Free.model_validate({"data": {"k": deep}})
        assert Free.model_validate({"data": {"k": [[["ok"]]]}})


class TestNumbersAndIds:
    @pytest.mark.parametrize(
        "offset", ["9223372036854775808", "99999999999999999999999", "-1", "1e3"]
    )
    def test_offset_beyond_bigint_is_422(self, api: Api, offset: str) -> None:
        user = client_for(api.url, api.user)
        path = f"/v1/sessions/{api.session_id}/messages"
        _error(user.get(path, params={"offset": offset}), 422)

    def test_largest_bigint_offset_is_an_empty_page(self, api: Api) -> None:
        user = client_for(api.url, api.user)
        path = f"/v1/sessions/{api.session_id}/messages"
        resp = user.get(path, params={"offset": str(2**63 - 1)})
        assert resp.status_code == 200 and resp.json() == {"items": []}

    @pytest.mark.parametrize(
        "last_id",
        [
            "bad",
            "99999999999999999999-0",
            "0-99999999999999999999",
            "1-2-3",
            "-1-0",
            "1.5-0",
            "1 -0",
        ],
    )
    def test_malformed_last_event_id_is_422(self, api: Api, last_id: str) -> None:
        user = client_for(api.url, api.user)
        path = f"/v1/jobs/{api.job_id}/events"
        _error(user.get(path, headers={"Last-Event-ID": last_id}), 422)
        _error(user.get(path, params={"last_event_id": last_id}), 422)

    def test_non_ascii_last_event_id_is_422(self, api: Api) -> None:
        user = client_for(api.url, api.user)
        resp = user.get(
            f"/v1/jobs/{api.job_id}/events", headers={"Last-Event-ID": "\xff1-0".encode("latin-1")}
        )
        _error(resp, 422)


class TestBodySize:
    def _chunks(self, total: int, chunk: int = 256 * 1024) -> Iterator[bytes]:
        yield b'{"content": "'
        sent = 0
        while sent < total:
            yield b"x" * chunk
            sent += chunk
        yield b'"}'

    def test_chunked_20mb_body_is_413_like_one_with_content_length(
        self, api: Api, session_factory: sessionmaker[Session]
    ) -> None:
        user = client_for(api.url, api.user)
        path = f"/v1/sessions/{api.session_id}/messages"
        before = _counts(session_factory)
        chunked = user.post(
            path, content=self._chunks(20_000_000), headers={"Content-Type": "application/json"}
        )
        assert "content-length" not in chunked.request.headers
        assert _error(chunked, 413)["code"] == "too_large"
        sized = user.post(path, content=b"".join(self._chunks(20_000_000)))
        assert _error(sized, 413)["code"] == "too_large"
        assert _counts(session_factory) == before
        # The server is still fine afterwards.
        assert user.get(f"/v1/sessions/{api.session_id}").status_code == 200

    def test_chunked_body_under_the_cap_is_accepted(self, api: Api) -> None:
        user = client_for(api.url, api.user)
        body = json.dumps({"title": "t" * 400}).encode()
        resp = user.post(
            "/v1/sessions",
            content=iter([body[:100], body[100:]]),
            headers={"Content-Type": "application/json"},
        )
        assert resp.status_code == 201, resp.text


class TestMethodNotAllowed:
    def test_405_names_the_allowed_methods(self, api: Api) -> None:
        user = client_for(api.url, api.user)
        resp = user.delete("/v1/jobs")
        assert _error(resp, 405)["code"] == "method_not_allowed"
        assert {m.strip() for m in resp.headers["allow"].split(",")} == {"GET", "POST"}


class TestSurveyJob:
    def test_survey_is_queued_with_its_input_and_no_opening_message(self, api: Api) -> None:
        # The worker writes the survey's opening prompt from job.input (no worker runs here).
        user = client_for(api.url, api.user)
        survey = {"topic": "PID tuning", "years": "2015-2024", "length": "short"}
        resp = user.post("/v1/jobs", json={"kind": "survey", "input": survey})
        assert resp.status_code == 202, resp.text
        job = user.get(f"/v1/jobs/{resp.json()['id']}").json()
        assert job["status"] == "queued" and job["kind"] == "survey"
        assert job["input"] == {
            **survey,
            "seed_papers": [],
            "venues": [],
            "formats": ["md", "tex"],
        }
        session = user.get(f"/v1/sessions/{job['session_id']}").json()
        assert session["title"] == "PID tuning"
        assert user.get(f"/v1/sessions/{job['session_id']}/messages").json() == {"items": []}
