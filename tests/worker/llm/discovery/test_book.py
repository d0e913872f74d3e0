"""The Redis cache of capabilities: hits, refreshes, config changes, one discovery
at a time, and configured values winning over discovered ones."""

from __future__ import annotations

import json
import threading

from redis import Redis

from services.common import model_caps
from services.common.contracts import keys
from services.model_sim.server import SimServerHandle, serve_in_thread
from services.worker.llm.discovery import BookConfig, CapabilityBook, DiscoveryConfig
from services.worker.llm.settings import ProfileConfig
from tests.worker.llm.discovery.conftest import N_CTX, probes_seen

MODEL = "leaflab-sim"
CONFIG = BookConfig(discovery=DiscoveryConfig(timeout_s=10), default_context=32000)


def _profile(sim: SimServerHandle, **options: object) -> ProfileConfig:
    return ProfileConfig(name="local", base_url=sim.base_url, models=[MODEL], **options)


def _book(redis: Redis, profile: ProfileConfig, config: BookConfig = CONFIG) -> CapabilityBook:
    book = CapabilityBook(redis, [(profile, MODEL)], config)
    book.load()
    return book


def test_a_second_worker_reads_the_cache_and_sends_no_probe(
    llama_sim: SimServerHandle, redis: Redis
) -> None:
    first = _book(redis, _profile(llama_sim))
    assert first.caps("local").structured_output == "json_object"
    seen = probes_seen(llama_sim)
    second = _book(redis, _profile(llama_sim))
    assert probes_seen(llama_sim) == seen
    assert second.caps("local") == first.caps("local")
    assert second.caps("local").context_tokens == N_CTX


def test_a_refresh_request_rediscovers_and_a_changed_profile_has_its_own_record(
    llama_sim: SimServerHandle, redis: Redis
) -> None:
    book = _book(redis, _profile(llama_sim))
    stamp = book.caps("local").discovered_at
    model_caps.request_refresh(redis)
    seen = probes_seen(llama_sim)
    book.refresh()
    assert probes_seen(llama_sim) > seen
    assert book.caps("local").discovered_at > stamp
    # Another option, another hash: rediscovered, not served the old record.
    seen = probes_seen(llama_sim)
    _book(redis, _profile(llama_sim, structured_output="prompt"))
    assert probes_seen(llama_sim) > seen
    assert len(list(redis.scan_iter(match=keys.model_caps_record("local", MODEL, "*")))) == 2


def test_configured_values_win_and_say_so(llama_sim: SimServerHandle, redis: Redis) -> None:
    profile = _profile(
        llama_sim, tool_protocol="json", context_tokens=2048, max_concurrency=0, alternation=False
    )
    book = _book(redis, profile)
    caps, sources = book.caps("local"), book.sources("local")
    assert (caps.tool_mode, caps.context_tokens, caps.max_concurrency) == ("json", 2048, None)
    assert caps.context_source == "configured" and caps.alternation is False
    assert sources["tool_mode"] == sources["context_tokens"] == "configured"
    assert sources["max_concurrency"] == sources["alternation"] == "configured"
    assert sources["structured_output"] == "discovered"
    assert caps.structured_output == "json_object"
    record = model_caps.read_records(redis)[0]
    assert record["configured"]["tool_mode"] == "json"
    assert record["discovered"]["tool_mode"] == "native"  # what the server itself offers
    assert "sk-" not in json.dumps(record)  # the key never reaches Redis


def test_the_old_json_tool_protocol_flag_still_works(llama_sim: SimServerHandle) -> None:
    profile = ProfileConfig(name="p", base_url=llama_sim.base_url, json_tool_protocol=True)
    assert profile.tool_protocol == "json"


def test_one_discovery_at_a_time_per_endpoint(llama_sim: SimServerHandle, redis: Redis) -> None:
    seen = probes_seen(llama_sim)
    books = [CapabilityBook(redis, [(_profile(llama_sim), MODEL)], CONFIG) for _ in range(4)]
    threads = [threading.Thread(target=b.load) for b in books]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    one_run = probes_seen(llama_sim) - seen
    assert all(b.caps("local").structured_output == "json_object" for b in books)
    # Exactly one discovery's probes: repeat it alone and compare.
    model_caps.request_refresh(redis)
    seen = probes_seen(llama_sim)
    books[0].refresh()
    assert one_run == probes_seen(llama_sim) - seen


def test_an_unreachable_endpoint_is_retried_soon(redis: Redis) -> None:
    with serve_in_thread() as gone:
        profile = _profile(gone)
    config = BookConfig(retry_s=2, discovery=DiscoveryConfig(timeout_s=3))
    book = _book(redis, profile, config)
    assert book.caps("local").reachable is False
    key = keys.model_caps_record("local", MODEL, "*")
    ttl = redis.ttl(next(iter(redis.scan_iter(match=key))))
    assert 0 < ttl <= 2


def test_without_discovery_the_configured_defaults_apply(
    llama_sim: SimServerHandle, redis: Redis
) -> None:
    seen = probes_seen(llama_sim)
    book = _book(redis, _profile(llama_sim, discover=False, structured_output="json_object"))
    assert probes_seen(llama_sim) == seen
    caps = book.caps("local")
    assert caps.structured_output == "json_object" and caps.context_tokens == 32000
