"""Memory maintenance after N turns (memory documents only, never beside the main
agent); the skills index and ``/name`` injection; prompt switching after turn k."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from services.common.contracts.keys import job_stream
from services.common.events import decode_entry
from services.common.models import Job, MemoryDocument
from tests.conftest import Stack
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.worker.context.session_script import received, received_at


def _put(sim_url: str, key: str, script: dict[str, Any]) -> None:
    base = sim_url.removesuffix("/v1")
    httpx.put(f"{base}/_sim/scripts/{key}", json=script, timeout=5).raise_for_status()


def _turn(client: httpx.Client, session_id: str, content: str) -> str:
    resp = client.post(f"/v1/sessions/{session_id}/messages", json={"content": content})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["job_id"])


def _memory_job(factory: sessionmaker[Session], session_id: str, timeout_s: float = 30) -> Job:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with factory() as db:
            job = db.scalar(
                select(Job).where(Job.session_id == uuid.UUID(session_id), Job.kind == "memory")
            )
            if job is not None:
                return job
        time.sleep(0.1)
    raise AssertionError("no memory maintenance job was created")


def _job(factory: sessionmaker[Session], job_id: str) -> Job:
    with factory() as db:
        job = db.get(Job, uuid.UUID(job_id))
        assert job is not None
        return job


class TestMemoryMaintenance:
    def test_runs_after_n_turns_and_touches_only_memory_documents(
        self, services: Services, session_factory: sessionmaker[Session]
    ) -> None:
        services.env["LEAFLAB_MEMORY_EVERY_TURNS"] = "2"
        sim = services.simulator()
        user = make_user(session_factory)
        client = client_for(services.api(), user)
        services.worker()
        session_id = client.post("/v1/sessions", json={}).json()["id"]
        _put(sim.url, session_id, {"replies": [{"content": f"answer {i}"} for i in range(3)]})
        write = {"action": "write", "scope": "user", "kind": "profile", "content": "Uses SI units."}
        _put(
            sim.url,
            f"{session_id}:memory",
            {
                "replies": [
                    {
                        "tool_calls": [
                            {"name": "memory", "arguments": write},
                            {"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}},
                        ]
                    },
                    {"content": "memory updated"},
                ]
            },
        )
        first = _turn(client, session_id, "I always work in SI units.")
        assert wait_job(client, first)["status"] == "succeeded"
        with session_factory() as db:  # one turn is not enough
            memory_jobs = select(Job.id).where(Job.kind == "memory", Job.user_id == user.id)
            assert db.scalar(memory_jobs) is None
        second = _turn(client, session_id, "Thanks.")
        assert wait_job(client, second)["status"] == "succeeded"
        memory = _memory_job(session_factory, session_id)
        # Submitted while maintenance is queued or running: it must wait its turn.
        third = _turn(client, session_id, "What units do I use?")

        done = wait_job(client, str(memory.id))
        assert done["status"] == "succeeded", done
        assert done["result"]["content"] == "memory updated"
        steps = client.get(f"/v1/jobs/{memory.id}/steps").json()["items"]
        tools = {s["name"]: s for s in steps if s["kind"] == "tool"}
        assert tools["memory"]["status"] == "succeeded"
        assert tools["write_file"]["status"] == "failed"
        assert tools["write_file"]["error"]["code"] == "unknown_tool"
        workspace = Path(services.env["LEAFLAB_HOME"]) / "workspaces" / session_id
        assert not (workspace / "x.txt").exists()
        with session_factory() as db:
            # This user's documents and whatever this job wrote (other tests' rows aside).
            mine = or_(
                MemoryDocument.owner_id == user.id, MemoryDocument.updated_by_job == memory.id
            )
            docs = db.scalars(select(MemoryDocument).where(mine)).all()
            assert [(d.scope, d.kind, d.content) for d in docs] == [
                ("user", "profile", "Uses SI units.")
            ]
        # The maintenance job read the conversation but added nothing to it.
        brief = received(sim.url, f"{session_id}:memory")[0][1]["content"]
        assert "I always work in SI units." in brief

        assert wait_job(client, third)["status"] == "succeeded"
        messages = client.get(f"/v1/sessions/{session_id}/messages").json()["items"]
        assert [m["role"] for m in messages] == ["user", "assistant"] * 3
        # Never beside the main agent: its model calls come after turn 2 finished
        # and before turn 3 (submitted while it was pending) called the model.
        m, t2 = (_job(session_factory, j) for j in (str(memory.id), second))
        assert m.finished_at and t2.finished_at
        calls = received_at(sim.url, f"{session_id}:memory")
        turn3_call = received_at(sim.url, session_id)[-1]
        assert t2.finished_at.timestamp() <= min(calls)
        assert max(calls) <= m.finished_at.timestamp() <= turn3_call
        # The next turn's system prompt carries the memory.
        system = received(sim.url, session_id)[-1][0]["content"]
        assert "Uses SI units." in system


class TestSkillsAndPromptSwitch:
    def test_index_in_prompt_name_injects_skill_and_switch_after_turn_k(
        self,
        services: Services,
        session_factory: sessionmaker[Session],
        stack: Stack,
        tmp_path: Path,
    ) -> None:
        skills = tmp_path / "skills"
        (skills / "units").mkdir(parents=True)
        body = "---\nname: units\ndescription: How to report physical units\n---\nAlways use SI."
        (skills / "units" / "SKILL.md").write_text(body)
        (skills / "broken").mkdir()
        (skills / "broken" / "SKILL.md").write_text("no front matter")
        services.env.update(
            {
                "LEAFLAB_SKILLS_DIR": str(skills),
                "LEAFLAB_PROMPT_SWITCH_AFTER_TURN": "1",
                "LEAFLAB_PROMPT_SWITCH_TO": "You are now a terse reviewer.",
                "LEAFLAB_MEMORY_EVERY_TURNS": "0",
            }
        )
        sim = services.simulator()
        client = client_for(services.api(), make_user(session_factory))
        services.worker()
        session_id = client.post("/v1/sessions", json={}).json()["id"]
        replies = [{"content": "one"}, {"content": "two"}, {"content": "three"}]
        _put(sim.url, session_id, {"replies": replies})
        _put(sim.url, f"{session_id}:summary", {"replies": [{"content": "We spoke of miles."}]})

        first = _turn(client, session_id, "/units convert 3 miles")
        assert wait_job(client, first)["status"] == "succeeded"
        request = received(sim.url, session_id)[0]
        assert "/units: How to report physical units" in request[0]["content"]
        assert "broken" not in request[0]["content"]
        assert request[-1]["content"].endswith("Always use SI.")
        stored = client.get(f"/v1/sessions/{session_id}/messages").json()["items"][0]
        assert stored["content"] == "/units convert 3 miles"

        second = _turn(client, session_id, "and now?")
        assert wait_job(client, second)["status"] == "succeeded"
        request = received(sim.url, session_id)[1]
        assert request[0]["content"] == "You are now a terse reviewer."
        events = redis.Redis.from_url(stack.redis_url).xrange(job_stream(second))
        switches = [decode_entry(i, f) for i, f in events]
        assert [e["data"] for e in switches if e["type"] == "prompt_switch"] == [{"to": "text"}]
        first_events = redis.Redis.from_url(stack.redis_url).xrange(job_stream(first))
        first_types = [decode_entry(i, f)["type"] for i, f in first_events]
        # The first turn's stream is there (it ended with "final"), and held no switch.
        assert "final" in first_types and "prompt_switch" not in first_types

        # /compact summarises the conversation so far on demand, below any threshold.
        third = _turn(client, session_id, "/compact")
        done = wait_job(client, third)
        assert done["status"] == "succeeded" and done["result"]["content"] == "three"
        steps = client.get(f"/v1/jobs/{third}/steps").json()["items"]
        assert [s["kind"] for s in steps] == ["summary", "llm"]
        assert steps[0]["result"]["covers"] == 4
        request = received(sim.url, session_id)[2]
        assert request[1]["content"].endswith("We spoke of miles.")
        assert request[-1] == {"role": "user", "content": "/compact"}
        events = redis.Redis.from_url(stack.redis_url).xrange(job_stream(third))
        layers = [
            decode_entry(i, f)["data"]["layer"]
            for i, f in events
            if decode_entry(i, f)["type"] == "compression"
        ]
        assert layers == ["summary"]
