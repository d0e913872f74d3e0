"""The failpoint spec: what fires, when, and what is refused (in this process)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.common import failpoints
from services.common.failpoints import FailpointError, configure, failpoint


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    configure(None)


def test_unset_fires_nothing() -> None:
    configure("tool.after_effect=raise")
    with pytest.raises(FailpointError):
        failpoint("tool.after_effect")
    configure(None)  # as with LEAFLAB_FAILPOINTS unset: what was configured is gone
    for _ in range(3):
        failpoint("tool.after_effect")  # would raise, were anything still configured
    assert dict(failpoints.parse("")) == {}


def test_raise_on_the_nth_hit_only() -> None:
    configure("tool.after_effect=raise@2; model.before_record=sleep(1)")
    failpoint("tool.after_effect")
    with pytest.raises(FailpointError, match="tool.after_effect"):
        failpoint("tool.after_effect")
    failpoint("tool.after_effect")
    failpoint("other.point")


def test_raise_without_n_fires_every_time() -> None:
    configure("job.before_finish=raise")
    for _ in range(2):
        with pytest.raises(FailpointError):
            failpoint("job.before_finish")


@pytest.mark.parametrize(
    "spec", ["job.before_finish", "=kill", "a=explode", "a=kill@0", "a=sleep(x)", "a=kill@-1"]
)
def test_unreadable_spec_is_refused_with_the_entry_named(spec: str) -> None:
    with pytest.raises(ValueError, match="LEAFLAB_FAILPOINTS"):
        failpoints.parse(spec)
