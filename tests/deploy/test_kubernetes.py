"""The Kubernetes manifests are valid and agree with the code, checked offline.

Every object is validated against the Kubernetes API schemas of the oldest
supported release (``kubernetes-validate``, strict: unknown fields fail) and
the KEDA objects against ``schemas/keda-v1alpha1.json``. Then the manifests
are cross-checked with the code: commands are `leaflab serve` roles that the
CLI accepts, every environment variable is a setting some service reads,
every reference (Secret key, ConfigMap, claim, probe port, scale target,
selector) points at something that exists, and each KEDA trigger watches the
Redis list that really holds its queue's messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import redis
import yaml
from click.testing import CliRunner

from services.cli.serve_cmd import serve
from services.cli.up.roles import ROLES
from services.common.contracts.tasks import AGENT_QUEUE, LIBRARY_QUEUE, SANDBOX_QUEUE
from services.common.settings import CommonSettings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
KEDA_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "keda-v1alpha1.json").read_text())
KUBERNETES_VERSION = "1.29"  # the oldest release the manifests promise to work on
QUEUE_OF_ROLE = {"worker": AGENT_QUEUE, "sandbox": SANDBOX_QUEUE, "library-worker": LIBRARY_QUEUE}


def _documents(*, with_example: bool = False) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        if path.name == "secret.example.yaml" and not with_example:
            continue
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _named(kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _documents() if d["kind"] == kind}


def _containers() -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in _documents():
        if doc["kind"] in ("Deployment", "Job"):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                yield doc["metadata"]["name"], container


def _settings_env_names() -> set[str]:
    """Every environment variable some Leaflab settings class reads."""
    from services.api.settings import ApiSettings
    from services.common.documents.settings import IntakeSettings
    from services.common.telemetry.settings import TelemetrySettings
    from services.library.settings import LibrarySettings
    from services.sandbox.settings import SandboxSettings
    from services.worker.settings import WorkerSettings

    names: set[str] = set()
    for cls in (
        CommonSettings,
        ApiSettings,
        WorkerSettings,
        SandboxSettings,
        LibrarySettings,
        IntakeSettings,
        TelemetrySettings,
    ):
        for field_name, field in cls.model_fields.items():
            alias = field.validation_alias
            if alias is None:
                names.add(f"LEAFLAB_{field_name.upper()}")
            elif isinstance(alias, str):
                names.add(alias)
            else:
                names.update(str(choice) for choice in alias.choices)
    return names


@pytest.mark.parametrize(
    "doc",
    _documents(with_example=True),
    ids=lambda d: f"{d['kind']}/{d['metadata']['name']}",
)
def test_object_matches_its_schema(doc: dict[str, Any]) -> None:
    if doc["apiVersion"].startswith("keda.sh/"):
        jsonschema.validate(doc, KEDA_SCHEMA)
    else:
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_schemas_refuse_a_broken_object() -> None:
    """The validators are not vacuous: an unknown field or a wrong type fails."""
    deployment = _named("Deployment")["leaflab-api"]
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["comand"] = ["typo"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)
    scaled = json.loads(json.dumps(_named("ScaledObject")["leaflab-worker"]))
    scaled["spec"]["minReplicaCount"] = "one"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(scaled, KEDA_SCHEMA)
    scaled = json.loads(json.dumps(_named("ScaledObject")["leaflab-worker"]))
    scaled["spec"]["triggers"][0]["metadata"]["listLength"] = 32
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(scaled, KEDA_SCHEMA)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    assert listed == on_disk
    assert {i["name"] for i in kustomization["images"]} == {"leaflab"}


def test_every_container_runs_a_command_the_cli_accepts() -> None:
    roles_seen = set()
    for owner, container in _containers():
        assert container["image"].split(":")[0] == "leaflab", owner
        command = container["command"]
        if command == ["leaflab", "migrate"]:
            continue
        assert command[:2] == ["leaflab", "serve"], f"{owner}: {command}"
        assert command[2] in ROLES, owner
        roles_seen.add(command[2])
        result = CliRunner().invoke(serve, [*command[2:], "--print"])
        assert result.exit_code == 0, f"{owner}: {result.output}"
    assert roles_seen == set(ROLES) - {"model-sim"}


def test_every_environment_variable_is_read_by_the_code() -> None:
    known = _settings_env_names()
    config = _named("ConfigMap")["leaflab-config"]["data"]
    secret_example = next(d for d in _documents(with_example=True) if d["kind"] == "Secret")
    names = set(config) | {k for k in secret_example["stringData"] if k.startswith("LEAFLAB_")}
    for _, container in _containers():
        names |= {e["name"] for e in container.get("env", [])}
    unknown = sorted(names - known)
    assert not unknown, f"no settings class reads {unknown}"


def test_references_point_at_objects_that_exist() -> None:
    secret = next(d for d in _documents(with_example=True) if d["kind"] == "Secret")
    secret_keys = set(secret["stringData"])
    configmaps = set(_named("ConfigMap"))
    claims = set(_named("PersistentVolumeClaim"))
    deployments = _named("Deployment")
    for doc in _documents():
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        pod = doc["spec"]["template"]["spec"]
        for container in pod["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in configmaps
                if "secretRef" in source:
                    assert source["secretRef"]["name"] == secret["metadata"]["name"]
            ports = {p["name"] for p in container.get("ports", [])}
            for probe in ("readinessProbe", "livenessProbe"):
                check = container.get(probe)
                if check:
                    port = (check.get("httpGet") or check.get("tcpSocket"))["port"]
                    assert port in ports, f"{doc['metadata']['name']} {probe} port {port}"
        for volume in pod.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims
    for kind in ("PodDisruptionBudget", "Service"):
        for doc in _named(kind).values():
            selector = doc["spec"]["selector"]
            selector = selector.get("matchLabels", selector)
            matched = [
                d
                for d in deployments.values()
                if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert len(matched) == 1, f"{kind}/{doc['metadata']['name']} selects {len(matched)}"
    for auth in _named("TriggerAuthentication").values():
        for ref in auth["spec"]["secretTargetRef"]:
            assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret_keys


def test_each_worker_scales_on_its_own_queue() -> None:
    deployments = _named("Deployment")
    scaled = _named("ScaledObject")
    targets = {}
    for so in scaled.values():
        deployment = deployments[so["spec"]["scaleTargetRef"]["name"]]
        command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
        (trigger,) = so["spec"]["triggers"]
        assert trigger["type"] == "redis"
        assert trigger["metadata"]["listName"] == QUEUE_OF_ROLE[command[2]]
        targets[command[2]] = so
        # KEDA owns the replica count: a fixed one would fight the autoscaler.
        assert "replicas" not in deployment["spec"]
    assert set(targets) == set(QUEUE_OF_ROLE)
    assert targets["sandbox"]["spec"]["minReplicaCount"] == 0
    assert targets["library-worker"]["spec"]["minReplicaCount"] == 0


def test_queue_messages_land_in_the_list_keda_watches(isolated_redis_url: str) -> None:
    """Send a real Celery message to each queue; the watched Redis list grows."""
    from services.common.celery_app import build_celery

    app = build_celery(CommonSettings(redis_url=isolated_redis_url))
    client = redis.Redis.from_url(isolated_redis_url)
    client.flushdb()
    try:
        for so in _named("ScaledObject").values():
            list_name = so["spec"]["triggers"][0]["metadata"]["listName"]
            before = client.llen(list_name)
            app.send_task("deploy.probe", queue=list_name)
            assert client.llen(list_name) == before + 1, list_name
    finally:
        client.flushdb()
