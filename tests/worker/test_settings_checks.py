"""Configuration that would let a running task be delivered twice is refused at start."""

from __future__ import annotations

import pytest
from celery import Celery
from pydantic import ValidationError

from services.common.celery_app import check_time_limits
from services.common.settings import CommonSettings
from services.worker.settings import WorkerSettings


def test_hard_limit_at_or_above_visibility_timeout_is_refused() -> None:
    with pytest.raises(ValidationError, match="visibility"):
        CommonSettings(task_hard_time_limit_s=600, broker_visibility_timeout_s=600)


def test_time_slice_must_fit_in_soft_limit() -> None:
    with pytest.raises(ValidationError, match="time_slice_s"):
        WorkerSettings(time_slice_s=300, task_soft_time_limit_s=240)


def test_celery_app_with_unsafe_limits_is_refused() -> None:
    app = Celery("t")
    app.conf.task_time_limit = 4000
    app.conf.broker_transport_options = {"visibility_timeout": 3600}
    with pytest.raises(RuntimeError, match="visibility timeout"):
        check_time_limits(app)
    app.conf.task_time_limit = 300
    check_time_limits(app)
