"""Schedule bodies and views."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from services.api.bodies import NOT_BLANK, RequestBody
from services.api.jobs.schemas import JobCreate, JobOut

# The job body is kept as JSON and submitted at every slot; a schedule is not a
# place to store a document (a turn's content has POST /v1/jobs's own limit).
MAX_JOB_BODY_BYTES = 64_000


class ScheduleCreate(RequestBody):
    cron: str = Field(
        min_length=1,
        max_length=200,
        pattern=NOT_BLANK,
        description='five cron fields or an alias, e.g. "0 9 * * MON" or "@daily"',
    )
    timezone: str = Field(
        default="UTC", min_length=1, max_length=100, description="IANA name, e.g. Europe/Paris"
    )
    job: JobCreate = Field(description="a POST /v1/jobs body, submitted at every slot")
    project: str | None = Field(
        default=None,
        max_length=200,
        description="the project of the schedule and its runs",
    )


class ScheduleView(BaseModel):
    id: uuid.UUID
    user_id: uuid.UUID
    project_id: uuid.UUID | None
    cron: str
    timezone: str
    job: dict[str, Any]
    paused: bool
    next_slot: datetime = Field(description="the next slot to run (UTC)")
    last_slot: datetime | None
    last_run_at: datetime | None = Field(description="when the last run's job was created")
    last_error: str | None = Field(description="why the last slot made no job, if it did not")
    created_at: datetime


class ScheduleList(BaseModel):
    items: list[ScheduleView]


class ScheduleRuns(BaseModel):
    items: list[JobOut]
