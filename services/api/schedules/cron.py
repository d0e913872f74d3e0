"""A schedule's slots: which instants a cron expression names in a timezone.

Slots are computed in the schedule's own timezone (so "09:00 every Monday"
stays 09:00 across daylight-saving changes) and stored in UTC. The cron
grammar is croniter's: five fields, ``@daily``-style aliases; the seconds field
and the ``R`` hash extension are refused, since a slot must be the same
instant for every process that computes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, croniter

# How many upcoming gaps are checked against the minimum interval: enough to meet
# the tight spot of any expression with a list of minutes or hours in one day.
GAPS_CHECKED = 200


class BadSchedule(ValueError):
    """The cron expression or the timezone cannot be used; ``code`` names which."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Cron:
    expression: str
    zone: ZoneInfo

    def next_after(self, moment: datetime) -> datetime:
        """The first slot strictly after ``moment`` (UTC)."""
        found: datetime = croniter(self.expression, moment.astimezone(self.zone)).get_next(datetime)
        return found.astimezone(UTC)

    def latest_at_or_before(self, moment: datetime) -> datetime:
        """The last slot at or before ``moment`` (UTC): the one a catch-up runs."""
        # croniter's get_prev is strict; a slot exactly at ``moment`` is still "due".
        local = moment.astimezone(self.zone) + timedelta(microseconds=1)
        found: datetime = croniter(self.expression, local).get_prev(datetime)
        return found.astimezone(UTC)

    def shortest_gap(self, start: datetime) -> timedelta:
        it = croniter(self.expression, start.astimezone(self.zone))
        slots = [it.get_next(datetime) for _ in range(GAPS_CHECKED + 1)]
        return min(b - a for a, b in zip(slots, slots[1:], strict=False))


def parse(expression: str, timezone: str) -> Cron:
    """A usable (expression, zone) or :class:`BadSchedule` saying what is wrong."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadSchedule(
            "unknown_timezone", f"unknown timezone {timezone!r}; use an IANA name like Europe/Paris"
        ) from None
    cleaned = " ".join(expression.split())
    if not cleaned.startswith("@") and len(cleaned.split(" ")) != 5:
        raise BadSchedule(
            "invalid_cron",
            f"{expression!r} is not a cron expression: five fields "
            "(minute hour day-of-month month day-of-week) or an alias like @daily",
        )
    # croniter's "R" (random) fields would give each process another slot.
    fields = cleaned.split(" ")
    if any(part == "R" or part.startswith("R(") for f in fields for part in f.split(",")):
        raise BadSchedule("invalid_cron", f"{expression!r}: random (R) fields are not allowed")
    if not croniter.is_valid(cleaned):
        raise BadSchedule("invalid_cron", f"{expression!r} is not a valid cron expression")
    try:
        cron = Cron(cleaned, zone)
        cron.next_after(datetime.now(UTC))
    except (CroniterBadCronError, CroniterBadDateError, ValueError) as err:
        raise BadSchedule("invalid_cron", f"{expression!r} names no usable slot: {err}") from None
    return cron
