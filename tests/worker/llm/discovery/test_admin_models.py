"""`GET /v1/admin/models`, `leaflab admin models` and the admin page's Models
section, on a real API process reading what a worker's CapabilityBook published."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner
from redis import Redis
from sqlalchemy.orm import Session, sessionmaker

from services.cli.main import cli
from services.model_sim.server import SimServerHandle
from services.worker.llm.discovery import BookConfig, CapabilityBook, DiscoveryConfig
from services.worker.llm.settings import ProfileConfig
from tests.conftest import Stack
from tests.fixtures.builders import TestUser, client_for, make_user
from tests.fixtures.processes import Services
from tests.worker.llm.discovery.conftest import N_CTX

MODEL = "leaflab-sim"


@pytest.fixture(scope="module")
def api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    services = Services(stack, tmp_path_factory.mktemp("admin_models"))
    try:
        yield services.api()
    finally:
        services.stop()


@pytest.fixture
def book(llama_sim: SimServerHandle, redis: Redis) -> Iterator[CapabilityBook]:
    profile = ProfileConfig(
        name="cpu", base_url=llama_sim.base_url, models=[MODEL], tool_protocol="json"
    )
    config = BookConfig(recheck_s=0.2, discovery=DiscoveryConfig(timeout_s=10))
    published = CapabilityBook(redis, [(profile, MODEL)], config)
    published.load()
    yield published
    published.stop()


def _cli(url: str, user: TestUser, *args: str) -> str:
    env = {"LEAFLAB_URL": url, "LEAFLAB_API_KEY": user.key, "COLUMNS": "200"}
    result = CliRunner().invoke(cli, ["admin", "models", *args], env=env)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_admins_see_each_endpoint_with_its_sources(
    api: str, book: CapabilityBook, session_factory: sessionmaker[Session]
) -> None:
    admin = make_user(session_factory, admin=True)
    report = client_for(api, admin).get("/v1/admin/models").json()
    (item,) = [i for i in report["items"] if i["profile"] == "cpu"]
    assert item["effective"]["context_tokens"] == N_CTX
    assert item["effective"]["tool_mode"] == "json"
    assert item["sources"]["tool_mode"] == "configured"
    assert item["sources"]["structured_output"] == "discovered"
    assert item["discovered"]["server"] == "llama-cpp-python"
    out = _cli(api, admin)
    assert f"[cpu] model {MODEL} at {item['base_url']} (llama-cpp-python)" in out
    assert f"context: {N_CTX} tokens (from the server's overflow error) [discovered]" in out
    assert "tools: JSON tool protocol [configured]" in out
    assert "concurrency: 1 [discovered]" in out
    assert '"tool_mode": "json"' in _cli(api, admin, "--json")


def test_non_admins_get_403(api: str, session_factory: sessionmaker[Session]) -> None:
    user = make_user(session_factory)
    assert client_for(api, user).get("/v1/admin/models").status_code == 403
    assert httpx.get(f"{api}/v1/admin/models").status_code == 401


def test_refresh_waits_for_the_workers_rediscovery(
    api: str, book: CapabilityBook, session_factory: sessionmaker[Session]
) -> None:
    admin = make_user(session_factory, admin=True)
    before = book.caps("cpu").discovered_at
    book.start()  # the worker's background recheck (every 0.2 s here)
    report = client_for(api, admin).get("/v1/admin/models?refresh=true&wait_s=20").json()
    assert report["refresh_pending"] is False
    (item,) = [i for i in report["items"] if i["profile"] == "cpu"]
    assert item["discovered"]["discovered_at"] > before >= 0
    assert book.caps("cpu").discovered_at == item["discovered"]["discovered_at"]


def test_refresh_without_a_worker_says_it_is_pending(
    api: str, book: CapabilityBook, session_factory: sessionmaker[Session]
) -> None:
    admin = make_user(session_factory, admin=True)
    out = _cli(api, admin, "--refresh", "--wait", "0.5")  # no book.start(): nobody rediscovers
    assert "[cpu]" in out and "not every worker has answered yet" in out
    report = client_for(api, admin).get("/v1/admin/models?refresh=true&wait_s=0.5").json()
    assert report["refresh_pending"] is True


def test_the_admin_page_has_a_models_section(
    api: str, book: CapabilityBook, session_factory: sessionmaker[Session]
) -> None:
    admin = make_user(session_factory, admin=True)
    with httpx.Client(base_url=api) as browser:
        token = browser.get("/login").cookies["leaflab_login_csrf"]
        login = browser.post(
            "/login", data={"api_key": admin.key, "csrf_token": token, "next": "/admin"}
        )
        assert login.status_code == 303, login.text
        page = browser.get("/admin")
    assert page.status_code == 200, page.text
    assert 'data-testid="models"' in page.text
    assert f'data-model="cpu:{MODEL}"' in page.text
    assert 'json <span class="muted">(configured)</span>' in page.text
    assert f'{N_CTX} <span class="muted">(discovered)</span>' in page.text
