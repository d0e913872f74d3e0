"""The tool schemas' encoding is reused only for the very same list."""

from __future__ import annotations

import json

from services.worker.llm.same_object import SameObject


def test_the_same_object_is_encoded_once_and_an_equal_new_one_again() -> None:
    calls: list[object] = []

    def encode(value: object) -> str:
        calls.append(value)
        return json.dumps(value)

    cached = SameObject(encode)
    schemas = [{"name": "glob"}]
    assert cached(schemas) == cached(schemas) == '[{"name": "glob"}]'
    assert len(calls) == 1
    narrowed = [{"name": "glob"}]  # equal, but a new list (a subagent's tool set)
    assert cached(narrowed) == '[{"name": "glob"}]'
    assert len(calls) == 2
    other = [{"name": "grep"}]
    assert cached(other) == '[{"name": "grep"}]'
    assert cached(schemas) == '[{"name": "glob"}]'  # one entry: the first is encoded anew
    assert len(calls) == 4
