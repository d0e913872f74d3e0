"""The sandbox's answer as a typed ``SandboxResult``: read by the code tools, stored unchanged.

No sandbox runs here: a fake port hands the python/bash tools the answers a
sandbox worker sends (tests/sandbox/ runs the real one), and the worker's
Celery client is given a fake pending result.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from services.common.contracts.sandbox import SandboxResult
from services.worker.tools import sandbox_client
from services.worker.tools.base import ToolContext, ToolError
from services.worker.tools.code import BashTool, PythonTool
from services.worker.tools.ports import SandboxRequest
from services.worker.tools.sandbox_client import CelerySandbox

# A finished run as services/sandbox/service.py builds it, plus a field a newer
# sandbox might add: every key (the None ones too) must reach the ledger as sent.
OK: dict[str, Any] = {
    "exit_code": 0,
    "stdout": "42\n",
    "stderr": "",
    "stdout_bytes": 3,
    "stderr_bytes": 0,
    "truncated": False,
    "timed_out": False,
    "killed_reason": None,
    "oom_killed": False,
    "duration_ms": 12.5,
    "warm": True,
    "sandbox_id": "abc123",
    "status": "ok",
    "backend": "docker",
    "artifacts": [{"name": "plot.png", "size": 2048, "mime": "image/png", "sha256": "ff"}],
    "artifacts_skipped": [{"name": "big.bin", "size": 10**9, "reason": "too large"}],
    "events": [{"type": "sandbox_start", "data": {"tool_call_id": "call-1"}, "at": 1.5}],
    "replayed": False,
    "disk": {
        "workspace_bytes": 2048,
        "workspace_cap_bytes": 1024**3,
        "user_bytes": 4096,
        "user_cap_bytes": 2 * 1024**3,
        "removed_files": 0,
        "removed_bytes": 0,
    },
    "from_a_newer_sandbox": {"kept": [1, 2]},
}


@dataclass
class FakeSandbox:
    answer: dict[str, Any]
    requests: list[tuple[SandboxRequest, float]] = field(default_factory=list)

    def execute(self, request: SandboxRequest, *, wait_s: float) -> SandboxResult:
        self.requests.append((request, wait_s))
        return SandboxResult.model_validate(self.answer)


def run_python(ctx: ToolContext, answer: dict[str, Any], **raw: Any) -> Any:
    tool = PythonTool()
    sandbox = FakeSandbox(answer)
    return tool.run(tool.parse({"code": "print(42)", **raw}), replace(ctx, sandbox=sandbox))


class TestFinishedRun:
    def test_the_ledger_gets_the_answer_exactly_as_sent(self, ctx: ToolContext) -> None:
        result = run_python(ctx, OK)
        assert result.data == OK
        assert "exit code: 0" in result.content and "42" in result.content
        assert "plot.png (2.0 KB, image/png)" in result.content
        assert "not stored: big.bin (too large)" in result.content

    def test_an_error_answer_stores_no_field_it_did_not_send(self) -> None:
        sent = {"status": "error", "error": {"code": "invalid_request", "message": "bad"}}
        assert SandboxResult.model_validate(sent).as_sent() == sent

    def test_the_request_carries_the_typed_timeout(self, ctx: ToolContext) -> None:
        tool = BashTool()
        sandbox = FakeSandbox(OK)
        tool.run(tool.parse({"command": "ls", "timeout": 5}), replace(ctx, sandbox=sandbox))
        [(request, wait_s)] = sandbox.requests
        assert (request.language, request.code, request.timeout_s) == ("bash", "ls", 5.0)
        assert wait_s == 35.0

    def test_truncated_output_is_said(self, ctx: ToolContext) -> None:
        answer = {**OK, "truncated": True, "stdout_bytes": 9_000_000}
        assert "stdout 9000000 bytes" in run_python(ctx, answer).content


class TestFailures:
    def test_timeout(self, ctx: ToolContext) -> None:
        answer = {**OK, "status": "timeout", "killed_reason": "timeout"}
        with pytest.raises(ToolError) as err:
            run_python(ctx, answer, timeout=3)
        assert err.value.code == "sandbox_timeout"
        assert "3s time limit" in err.value.message and "42" in err.value.message
        assert err.value.details == {
            "events": OK["events"],
            "sandbox_id": "abc123",
            "backend": "docker",
            "duration_ms": 12.5,
        }

    def test_killed_for_disk_says_what_was_taken_back(self, ctx: ToolContext) -> None:
        disk = {**OK["disk"], "removed_files": 2, "removed_bytes": 3 * 1024**2}
        answer = {**OK, "status": "killed", "killed_reason": "workspace_quota", "disk": disk}
        with pytest.raises(ToolError) as err:
            run_python(ctx, answer)
        assert err.value.code == "sandbox_disk_quota"
        assert "the 2 file(s) it wrote past it (3.0 MB)" in err.value.message

    def test_refused_is_a_policy_error_with_the_sandbox_code(self, ctx: ToolContext) -> None:
        answer = {"status": "refused", "error": {"code": "dangerous_command", "message": "no"}}
        with pytest.raises(ToolError) as err:
            run_python(ctx, answer)
        assert (err.value.code, err.value.category, err.value.message) == (
            "dangerous_command",
            "policy",
            "no",
        )
        # Fields the answer did not carry are None, as they were when read from a dict.
        assert err.value.details == dict.fromkeys(
            ("events", "sandbox_id", "backend", "duration_ms")
        )

    def test_unavailable_is_retryable(self, ctx: ToolContext) -> None:
        answer = {"status": "error", "error": {"code": "sandbox_unavailable", "message": "x"}}
        with pytest.raises(ToolError) as err:
            run_python(ctx, answer)
        assert err.value.retryable and err.value.category == "sandbox"

    def test_an_unknown_status_fails_naming_it(self, ctx: ToolContext) -> None:
        with pytest.raises(ToolError) as err:
            run_python(ctx, {"status": "exploded"})
        assert (err.value.code, err.value.message) == (
            "sandbox_failed",
            "sandbox status 'exploded'",
        )


class _Pending:
    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def get(self, **_: Any) -> Any:
        return self.answer


class TestCeleryClient:
    REQUEST = SandboxRequest(
        job_id="job-1",
        tool_call_id="call-1",
        session_id=None,
        project_id=None,
        language="python",
        code="print(1)",
        timeout_s=1.0,
    )

    def client(self, monkeypatch: pytest.MonkeyPatch, answer: Any) -> CelerySandbox:
        monkeypatch.setattr(sandbox_client, "send_sandbox_exec", lambda *_a, **_k: _Pending(answer))
        return CelerySandbox(object(), queue="sandbox")  # type: ignore[arg-type]

    def test_the_answer_becomes_a_sandbox_result(self, monkeypatch: pytest.MonkeyPatch) -> None:
        result = self.client(monkeypatch, OK).execute(self.REQUEST, wait_s=1.0)
        assert isinstance(result, SandboxResult)
        assert result.status == "ok" and result.artifacts and result.artifacts[0].size == 2048
        assert result.as_sent() == OK

    @pytest.mark.parametrize("answer", [None, "ok", {"stdout": "no status"}])
    def test_a_malformed_answer_is_a_tool_error(
        self, monkeypatch: pytest.MonkeyPatch, answer: Any
    ) -> None:
        with pytest.raises(ToolError) as err:
            self.client(monkeypatch, answer).execute(self.REQUEST, wait_s=1.0)
        assert err.value.code == "sandbox_failed" and err.value.category == "sandbox"
