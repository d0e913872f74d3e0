"""`leaflab admin prices` prints every priced and routed model with its source."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from services.cli.main import cli


def test_admin_prices_shows_each_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAFLAB_MODEL_PRICES", '{"cloud-big": [3, 15, 0.3]}')
    monkeypatch.setenv(
        "LEAFLAB_GPU_PRICING", '{"qwen3-32b": {"usd_per_gpu_hour": 2.5, "tokens_per_s": 1800}}'
    )
    monkeypatch.setenv("LEAFLAB_MODEL", "qwen3-32b")
    monkeypatch.setenv("LEAFLAB_MODEL_FAST", "small")
    result = CliRunner().invoke(cli, ["admin", "prices"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()[1:-1]}
    assert rows["cloud-big"] == ["3.0000", "0.3000", "15.0000", "configured"]
    # $2.50/h over 1800 tokens/s = $0.3858 per million tokens.
    assert rows["qwen3-32b"] == ["0.3858", "0.0386", "0.3858", "gpu_derived"]
    assert rows["small"][-1] == "default"
