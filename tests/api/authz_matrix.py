"""An authorisation matrix derived from /openapi.json: every route × method, as another user.

Owner A's ids fill every path parameter; user B's key (or none) makes the
request with a minimal schema-valid body. A new route is covered the day it
appears in the schema; a new path parameter name must be given one of A's ids
(the matrix fails until it is), and a route may skip authentication only if it
is listed as public.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

PUBLIC_ROUTES = frozenset({("GET", "/healthz")})
METHODS = ("get", "post", "put", "patch", "delete")

# Values for string patterns used in request bodies (checked against the pattern).
PATTERN_VALUES = ("x", "b@lab.test", "2020", "proj x", "http://example.org/paper.pdf")


@dataclass(frozen=True)
class Probe:
    method: str
    template: str
    path: str
    body: Any
    params: dict[str, str] | None = None


# Query parameters that name another user's things: given A's ids by these names.
QUERY_IDS = {
    "user": "user_id",
    "project": "project_id",
    "session": "session_id",
    "parent": "job_id",
}


def probes(document: dict[str, Any], ids: Mapping[str, str]) -> Iterator[Probe]:
    """One request per route and method, A's ids in the path, a minimal valid body."""
    for template, item in document["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            path = template
            for name in re.findall(r"{(\w+)}", template):
                assert name in ids, f"{method.upper()} {template}: give the matrix A's {name}"
                path = path.replace("{" + name + "}", ids[name])
            body = None
            if "requestBody" in op:
                media = op["requestBody"]["content"]
                if "application/json" in media:
                    body = example(media["application/json"]["schema"], document)
            yield Probe(method.upper(), template, path, body)


def example(schema: dict[str, Any], document: dict[str, Any]) -> Any:
    """A small value the schema accepts (required fields only)."""
    if "$ref" in schema:
        return example(_resolve(schema["$ref"], document), document)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return example(options[0], document)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example(props[k], document) for k in schema.get("required", [])}
    if kind == "array":
        return [example(schema["items"], document)] if schema.get("minItems") else []
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    pattern = schema.get("pattern")
    if pattern is None:
        return "xyz"
    for value in PATTERN_VALUES:
        if re.search(pattern, value) and len(value) >= schema.get("minLength", 0):
            return value
    raise AssertionError(f"add a value for pattern {pattern!r} to PATTERN_VALUES")


def _resolve(ref: str, document: dict[str, Any]) -> dict[str, Any]:
    node: Any = document
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return dict(node)


def with_query_variants(document: dict[str, Any], ids: Mapping[str, str]) -> Iterator[Probe]:
    """Every probe, then each GET again once per query parameter: booleans set to
    true (``?all=true``), parameters that name a user, project, session or job
    given A's ids — so a flag only an admin may use is tried by everyone."""
    for probe in probes(document, ids):
        yield probe
        if probe.method != "GET":
            continue
        op = document["paths"][probe.template]["get"]
        for param in op.get("parameters", []):
            if param.get("in") != "query":
                continue
            name, schema = param["name"], param.get("schema", {})
            kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
            if "boolean" in kinds:
                yield Probe("GET", probe.template, probe.path, None, {name: "true"})
            elif name in QUERY_IDS:
                yield Probe("GET", probe.template, probe.path, None, {name: ids[QUERY_IDS[name]]})


def send(client: httpx.Client, probe: Probe) -> httpx.Response:
    if probe.body is None:
        return client.request(probe.method, probe.path, params=probe.params)
    return client.request(probe.method, probe.path, json=probe.body, params=probe.params)
