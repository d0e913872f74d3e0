"""Every command INTERFACES.md promises is on the `leaflab` command line."""

from __future__ import annotations

from click.testing import CliRunner

from services.cli.main import cli

PROMISED = [
    ["up"],
    ["submit"],
    ["watch"],
    ["jobs"],
    ["cancel"],
    ["trace"],
    ["survey"],
    ["batch"],
    ["library", "ingest"],
    ["library", "search"],
    ["library", "eval"],
    ["admin", "user", "create"],
    ["admin", "key", "create"],
    ["admin", "budget", "set"],
    ["admin", "budget", "list"],
    ["admin", "spend"],
    ["model-sim"],
    ["sandbox", "build-image"],
    ["migrate"],
    ["approvals"],
    ["approve"],
    ["memory", "proposals"],
    ["memory", "decide"],
]


def test_every_promised_command_answers_help() -> None:
    runner = CliRunner()
    for words in PROMISED:
        result = runner.invoke(cli, [*words, "--help"])
        assert result.exit_code == 0, (words, result.output)
        assert "Usage:" in result.output


def test_watch_renders_a_live_job_readably() -> None:
    from services.cli.watch import render_event

    state: dict = {}
    shown = [
        render_event({"event": "status", "data": {"status": "running"}}, state),
        render_event({"event": "tool_start", "data": {"name": "todo"}}, state),
        render_event(
            {
                "event": "todo",
                "data": {
                    "items": [
                        {"content": "read", "status": "completed"},
                        {"content": "write", "status": "in_progress"},
                    ]
                },
            },
            state,
        ),
        render_event({"event": "tool_end", "data": {"status": "succeeded"}}, state),
        render_event({"event": "token", "data": {"text": "Done"}}, state),
        render_event({"event": "final", "data": {"status": "succeeded"}}, state),
    ]
    text = "".join(s for s in shown if s)
    assert "[running]" in text and "→ todo" in text
    assert "todo 1/2" in text and "[x] read" in text and "[>] write" in text
    assert "\nDone" in text and "[succeeded] after 1 tool call(s)" in text
