"""A tool-using conversation continued on the real server, through the platform.

Gemma's chat template (llama.cpp) has no tool role and refuses two messages of one
role in a row, so a session whose history holds a tool call and its result is exactly
what used to fail every later turn. The first turn runs on the simulator (scripted:
the model calls ``todo``, the tool runs in the worker, then it answers); the second
turn runs on the real server, whose capabilities a worker discovers by itself. Judged
on behaviour: the turn succeeds, its request was shaped for the endpoint (JSON tool
protocol, nothing sent to fail) and its usage is what the server reported.
"""

from __future__ import annotations

import json

from sqlalchemy.orm import Session, sessionmaker

from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import Services
from tests.fixtures.real_model import RealModelServer
from tests.real_model.test_chat_turn import real_model_env

TODO = {"todos": [{"content": "read the paper", "status": "in_progress"}]}


def test_a_session_with_tool_history_continues_on_the_real_server(
    real_model: RealModelServer,
    services: Services,
    session_factory: sessionmaker[Session],
) -> None:
    sim = services.simulator()
    url = services.api()
    simulated = services.worker(name="sim-worker", concurrency=2)
    client = client_for(url, make_user(session_factory))
    session = client.post("/v1/sessions", json={"title": "tools then real"}).json()
    sim.set_script(
        session["id"],
        {
            "replies": [
                {"tool_calls": [{"name": "todo", "arguments": TODO}]},
                {"content": "I noted the task."},
            ]
        },
    )
    first = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "Plan my reading."}
    )
    assert first.status_code == 202, first.text
    done = wait_job(client, first.json()["job_id"], timeout_s=60)
    assert done["status"] == "succeeded", done
    history = client.get(f"/v1/sessions/{session['id']}/messages").json()["items"]
    roles = [m["role"] for m in history]
    assert roles == ["user", "assistant", "tool", "assistant"], roles

    # The next turn goes to the real server (its worker discovers what it accepts).
    simulated.stop()
    services.env.update(real_model_env(real_model))
    services.worker(name="real-worker", concurrency=1)
    second = client.post(
        f"/v1/sessions/{session['id']}/messages", json={"content": "What is on my list?"}
    )
    assert second.status_code == 202, second.text
    job = wait_job(client, second.json()["job_id"], timeout_s=420)
    assert job["status"] == "succeeded", (job, real_model.log()[-3000:])

    steps = client.get(f"/v1/jobs/{job['id']}/steps").json()["items"]
    llm = [s for s in steps if s["kind"] == "llm"]
    assert llm and llm[0]["status"] == "succeeded", steps
    context = llm[0]["arguments"]["context"]
    # Shaped for this server: tools in the prompt (JSON protocol), counted in the window.
    assert context["tool_mode"] == "json", json.dumps(context)
    assert context["tools_tokens"] > 0
    assert context["evaluated_tokens"] <= context["window_tokens"]
    result = llm[0]["result"]
    assert result["model"] == real_model.model
    usage = result["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0, usage
