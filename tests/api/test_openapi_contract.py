"""/openapi.json tells the truth, checked by schemathesis against a real uvicorn API.

Bounded and reproducible: few examples per operation, derandomized. The API
runs without workers; jobs it accepts simply stay queued.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance
from sqlalchemy.orm import Session, sessionmaker

from tests.api.live_library import api_with_library
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, make_user
from tests.worker.mcp.conftest import clear_stored_list

EXAMPLES_PER_OPERATION = 8
# Operations whose schema-valid input may still be refused for what a schema
# cannot say: any bytes are a valid "binary" file, but only a PDF is accepted
# (415) as a document and only a bibliography (422) as an import; a webhook URL
# of the right form may name a host the outbound guard refuses (422); a
# schedule's cron string must name real slots, its timezone a real zone (422);
# an MCP server list is checked entry by entry as LEAFLAB_MCP_SERVERS is (422).
# Every other check still applies to them.
CONTENT_CHECKED = {
    "PUT /v1/admin/mcp-servers",
    "POST /v1/library/documents",
    "POST /v1/library/imports",
    "POST /v1/schedules",
    "POST /v1/webhooks",
}


@pytest.fixture(scope="module")
def contract_api(
    stack: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    session_factory: sessionmaker[Session],
    isolated_redis_url: str,
) -> Iterator[tuple[str, TestUser]]:
    # A generated Zotero import reaches a loopback port the guard refuses at once
    # (a failed import), never the internet.
    no_zotero = {"LEAFLAB_ZOTERO_URL": "http://127.0.0.1:9"}
    base = tmp_path_factory.mktemp("contract")
    with api_with_library(stack, base, isolated_redis_url, no_zotero) as url:
        yield url, make_user(session_factory, admin=True)
    # Generated PUTs may have stored an MCP server list; later workers must not offer it.
    clear_stored_list(session_factory)


@pytest.fixture(scope="module")
def openapi(contract_api: tuple[str, TestUser]) -> dict[str, Any]:
    url, _ = contract_api
    document: dict[str, Any] = httpx.get(f"{url}/openapi.json").json()
    return document


@pytest.fixture(scope="module")
def api_schema(contract_api: tuple[str, TestUser]) -> Any:
    url, _ = contract_api
    return schemathesis.openapi.from_url(f"{url}/openapi.json")


@pytest.fixture(scope="module")
def admin_headers(contract_api: tuple[str, TestUser]) -> dict[str, str]:
    return {"Authorization": f"Bearer {contract_api[1].key}"}


def _conformance(operation: Any, headers: dict[str, str]) -> Any:
    """A bounded, derandomized hypothesis run of one operation's cases."""
    excluded = [positive_data_acceptance] if operation.label in CONTENT_CHECKED else []

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        case.call_and_validate(headers=headers, timeout=30, excluded_checks=excluded)

    return check


def test_api_conforms_to_its_schema(api_schema: Any, admin_headers: dict[str, str]) -> None:
    """No 5xx, no undeclared status, every body matches its schema, per operation.

    Driven through hypothesis directly (schemathesis' pytest plugin does not
    load under this pytest); every operation is tried and all failures are
    reported together.
    """
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20
    for operation in operations:
        try:
            _conformance(operation, admin_headers)()
        except Exception as exc:  # collect every operation's failure, then fail once
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, op in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield method.upper(), path, op


class TestDeclarations:
    def test_bearer_scheme_is_declared_and_required_on_every_v1_route(
        self, openapi: dict[str, Any]
    ) -> None:
        schemes = openapi["components"]["securitySchemes"]
        (name,) = [n for n, s in schemes.items() if s == {**s, "type": "http", "scheme": "bearer"}]
        for method, path, op in _operations(openapi):
            if path.startswith("/v1/"):
                assert op.get("security") == [{name: []}], (method, path)

    def test_every_v1_success_names_its_schema_and_errors_use_the_error_body(
        self, openapi: dict[str, Any]
    ) -> None:
        for method, path, op in _operations(openapi):
            if not path.startswith("/v1/"):
                continue
            success = {k: v for k, v in op["responses"].items() if k.startswith("2")}
            assert len(success) == 1, (method, path)
            ((status, response),) = success.items()
            if status != "204":
                (media,) = response["content"].values()
                schema_ = media["schema"]
                assert "$ref" in schema_ or schema_.get("type") == "string", (method, path)
            for code in ("401", "422"):
                ref = op["responses"][code]["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/ErrorBody"), (method, path, code)
            if method in {"POST", "PATCH"} and "requestBody" in op:
                assert "413" in op["responses"], (method, path)
            if "{" in path:
                assert "404" in op["responses"] or "/admin/" in path, (method, path)
            if path.startswith("/v1/admin/"):
                assert "403" in op["responses"], (method, path)
