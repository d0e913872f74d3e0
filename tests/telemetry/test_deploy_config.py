"""Dashboards and deploy configs refer only to things that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY
from sqlalchemy import Engine, text

from services.common.metrics import JobStatusCollector, QueueDepthCollector
from services.common.metrics.definitions import COLLECTOR_UP_METRIC

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARDS = sorted((DEPLOY / "grafana" / "dashboards").glob("*.json"))
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "leaflab.yml"

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                "or", "unless", "offset", "le", "inf", "nan"}  # fmt: skip


def _sample_names() -> set[str]:
    """Every series name the process can expose, from the registry's metric families."""
    names = {COLLECTOR_UP_METRIC}
    families = list(REGISTRY.collect())
    families += list(QueueDepthCollector.describe(None))  # type: ignore[arg-type]
    families += list(JobStatusCollector.describe(None))  # type: ignore[arg-type]
    suffixes = {
        "counter": ["_total", "_created"],
        "histogram": ["_bucket", "_sum", "_count", "_created"],
        "gauge": [""],
    }
    for family in families:
        for suffix in suffixes.get(family.type, [""]):
            names.add(family.name + suffix)
    return names


def promql_metric_names(expr: str) -> set[str]:
    """Series names used by a PromQL expression (labels, functions and keywords removed)."""
    expr = re.sub(r'"[^"]*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    found = set()
    for match in re.finditer(r"(?<![\w$])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", expr):
        word, call = match.group(1), match.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        found.add(word)
    return found


def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in dashboard["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def _datasource_uids() -> set[str]:
    config = yaml.safe_load(DATASOURCES.read_text())
    return {ds["uid"] for ds in config["datasources"]}


class TestDashboards:
    def test_four_dashboards_with_unique_uids(self) -> None:
        uids = [json.loads(p.read_text())["uid"] for p in DASHBOARDS]
        assert len(DASHBOARDS) == 4 and len(set(uids)) == 4

    @pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
    def test_every_promql_metric_exists(self, path: Path) -> None:
        known = _sample_names()
        dashboard = json.loads(path.read_text())
        exprs = [t["expr"] for p in _panels(dashboard) for t in p.get("targets", []) if "expr" in t]
        assert exprs
        for expr in exprs:
            names = promql_metric_names(expr)
            assert names, expr
            assert names <= known, f"{path.name}: unknown {names - known} in {expr}"

    @pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
    def test_datasources_are_provisioned_and_linked(self, path: Path) -> None:
        uids = _datasource_uids()
        dashboard = json.loads(path.read_text())
        for panel in _panels(dashboard):
            assert panel["datasource"]["uid"] in uids
            for target in panel.get("targets", []):
                assert target["datasource"]["uid"] in uids
        assert any(link.get("tags") == ["leaflab"] for link in dashboard["links"])

    @pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.stem)
    def test_postgres_panels_run_against_the_schema(self, path: Path, engine: Engine) -> None:
        dashboard = json.loads(path.read_text())
        for panel in _panels(dashboard):
            for target in panel.get("targets", []):
                if "rawSql" not in target:
                    continue
                sql = re.sub(r"\$__timeFilter\([^)]*\)", "TRUE", target["rawSql"])
                with engine.connect() as conn:
                    conn.execute(text(sql)).all()


class TestDeployConfig:
    def test_promql_parser_sees_through_labels_and_functions(self) -> None:
        expr = (
            'histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{service="x",le!=""}[5m])))'
            " / ignoring(x) b_total or vector(0)"
        )
        assert promql_metric_names(expr) == {"a_bucket", "b_total"}

    def test_yaml_files_parse_and_wire_up(self) -> None:
        collector = yaml.safe_load((DEPLOY / "otel" / "collector.yaml").read_text())
        traces = collector["service"]["pipelines"]["traces"]
        assert traces["receivers"] == ["otlp"] and "otlp/jaeger" in traces["exporters"]
        assert "prometheus" in collector["exporters"]
        prom = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
        jobs = {job["job_name"] for job in prom["scrape_configs"]}
        assert {"leaflab-api", "leaflab-worker", "leaflab-sandbox", "leaflab-library",
                "otel-collector"} <= jobs  # fmt: skip
        compose = yaml.safe_load((DEPLOY / "compose.observability.yml").read_text())
        assert {"otel-collector", "jaeger", "prometheus", "grafana"} <= set(compose["services"])
        for service in compose["services"].values():
            for volume in service.get("volumes", []):
                source = volume.split(":")[0]
                if source.startswith("./"):
                    assert (DEPLOY / source).exists(), source
        assert _datasource_uids() == {"leaflab-prometheus", "leaflab-jaeger", "leaflab-postgres"}
