"""The ``Collection`` contract: each kind round-trips through its storage text
unchanged, anything else is refused with a message, and a pydantic field that
carries one refuses a bad value naming the field."""

from __future__ import annotations

import json
import uuid

import pytest
from pydantic import BaseModel, ValidationError

from services.common.contracts.collections import Collection, CollectionKind

USER = uuid.UUID("3f2b1c9e-4d5a-4b6c-8d7e-9f0a1b2c3d4e")
PROJECT = uuid.UUID("a1b2c3d4-e5f6-4789-8abc-def012345678")


def test_each_kind_round_trips_through_todays_text() -> None:
    personal, project, lab = Collection.personal(USER), Collection.project(PROJECT), Collection.LAB
    assert (personal.key, project.key, lab.key) == (f"user:{USER}", f"project:{PROJECT}", "lab")
    assert str(personal) == f"user:{USER}"
    assert json.dumps([personal]) == json.dumps([f"user:{USER}"])
    for c in (personal, project, lab):
        assert Collection.parse(c.key) == c
    assert (personal.kind, personal.owner_id, personal.project_id) == (
        CollectionKind.USER,
        USER,
        None,
    )
    assert (project.kind, project.owner_id, project.project_id) == (
        CollectionKind.PROJECT,
        None,
        PROJECT,
    )
    assert (lab.kind, lab.owner_id, lab.project_id) == (CollectionKind.LAB, None, None)


@pytest.mark.parametrize(
    "text",
    [
        "user:",
        "user:not-a-uuid",
        "project:../x",
        "LAB",
        "",
        "x" * 10_000,
        "user:" + "0" * 10_000,
        "lab\x00",
        f"user:{USER}\x00",
        f"user:{str(USER).upper()}",
        f"team:{USER}",
        f"user:{USER}:extra",
    ],
)
def test_anything_else_is_refused_with_a_message(text: str) -> None:
    with pytest.raises(ValueError, match="collection"):
        Collection.parse(text)


def test_equal_values_are_equal_and_hash_alike() -> None:
    a, b = Collection.personal(USER), Collection.parse(f"user:{USER}")
    assert a == b and hash(a) == hash(b) and len({a, b, f"user:{USER}"}) == 1
    assert Collection.personal(USER) != Collection.project(USER)


class _Upload(BaseModel):
    collection: Collection


def test_a_pydantic_field_refuses_a_bad_value_naming_the_field() -> None:
    with pytest.raises(ValidationError) as err:
        _Upload(collection="project:../x")
    (error,) = err.value.errors()
    assert error["loc"] == ("collection",) and "UUID" in error["msg"]
    good = _Upload(collection=f"project:{PROJECT}")
    assert good.model_dump_json() == json.dumps({"collection": f"project:{PROJECT}"}).replace(
        " ", ""
    )
