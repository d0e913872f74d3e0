"""`leaflab library check-claims FILE.jsonl` as a real process on a real file: each
line answered with supported, score and every check, no server and no model; any
bad line named by its number, exit 2, nothing checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from services.cli.check_claims_cmd import MAX_LINE_BYTES

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = "import sys; from services.cli.main import cli; sys.argv[0] = 'leaflab'; cli()"
PASSAGE = "Averaged across datasets, we observe +0.60 F1 when using SCIVOCAB for SCIBERT."
GOOD = {"claim": "SCIVOCAB adds 0.60 F1 averaged across datasets.", "passage": PASSAGE, "id": 7}
UNRELATED = {"claim": "Quantum annealing answers every literature question.", "passage": PASSAGE}


def check_claims(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # No LEAFLAB_URL / API key: the command must not need a server.
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAFLAB_")}
    return subprocess.run(  # noqa: S603 - our own interpreter and CLI
        [sys.executable, "-c", ENTRY_POINT, "library", "check-claims", str(path), *args],
        cwd=ROOT,
        env={**env, "COLUMNS": "120"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


class TestGoodInput:
    def test_json_lines_echo_each_object_with_supported_and_score(self, tmp_path: Path) -> None:
        path = write_lines(tmp_path / "c.jsonl", [json.dumps(GOOD), json.dumps(UNRELATED)])
        done = check_claims(path, "--json")
        assert done.returncode == 0, done.stderr
        first, second = (json.loads(line) for line in done.stdout.splitlines())
        assert {k: first[k] for k in GOOD} == GOOD and first["supported"] is True
        assert second["supported"] is False
        assert 0.0 <= second["score"] < first["score"] <= 1.0
        # The packaged MiniLM came through services.library.operator: combined checks.
        assert first["mode"] == "combined"
        names = [c["name"] for c in first["checks"]]
        assert names == ["lexical", "embedding", "numbers", "terms"]
        assert "shares no content word" in second["reason"]

    def test_a_wrong_number_is_flagged(self, tmp_path: Path) -> None:
        wrong = {**GOOD, "claim": "SCIVOCAB adds 0.90 F1 averaged across datasets."}
        path = write_lines(tmp_path / "c.jsonl", [json.dumps(wrong)])
        done = check_claims(path, "--json", "--lexical-only")
        assert done.returncode == 0, done.stderr
        (row,) = (json.loads(line) for line in done.stdout.splitlines())
        assert row["supported"] is False and row["mode"] == "lexical-only"
        numbers = next(c for c in row["checks"] if c["name"] == "numbers")
        assert numbers["passed"] is False and "0.9" in numbers["detail"]

    def test_the_table_names_each_line_and_its_failed_checks(self, tmp_path: Path) -> None:
        path = write_lines(tmp_path / "c.jsonl", [json.dumps(GOOD), json.dumps(UNRELATED)])
        done = check_claims(path, "--lexical-only")
        assert done.returncode == 0, done.stderr
        header, first, second = done.stdout.splitlines()
        assert header.split("\t")[:3] == ["LINE", "SUPPORTED", "SCORE"]
        assert first.split("\t")[:2] == ["1", "yes"]
        assert second.split("\t")[:2] == ["2", "NO"] and "lexical" in second


class TestBadInput:
    def test_each_bad_line_is_named_and_nothing_is_checked(self, tmp_path: Path) -> None:
        lines = [
            "not json",
            json.dumps({"claim": "only a claim"}),
            json.dumps(["a", "list"]),
            json.dumps({"claim": 3, "passage": "x"}),
            json.dumps({"claim": "x" * (MAX_LINE_BYTES + 10), "passage": "y"}),
            json.dumps(GOOD),
        ]
        done = check_claims(write_lines(tmp_path / "c.jsonl", lines), "--json", "--lexical-only")
        assert done.returncode == 2
        assert "Traceback" not in done.stderr
        errors = done.stderr.splitlines()
        assert [e.split(":")[1].strip() for e in errors] == [f"line {n}" for n in range(1, 6)]
        assert "not valid JSON" in errors[0] and "'passage' missing" in errors[1]
        assert "expected an object" in errors[2] and "'claim' missing" in errors[3]
        assert f"longer than {MAX_LINE_BYTES} bytes" in errors[4]
        assert done.stdout == ""

    def test_hostile_bytes_and_deep_nesting_are_refused_cleanly(self, tmp_path: Path) -> None:
        path = tmp_path / "c.jsonl"
        path.write_bytes(b"\xff\xfe\x00garbage\n" + b"[" * 100_000 + b"\n")
        done = check_claims(path, "--json")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert [e.split(":")[1].strip() for e in done.stderr.splitlines()] == ["line 1", "line 2"]

    def test_a_missing_file_is_a_usage_error(self, tmp_path: Path) -> None:
        done = check_claims(tmp_path / "absent.jsonl")
        assert done.returncode == 2 and "does not exist" in done.stderr
