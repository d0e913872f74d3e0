"""Webhook delivery settings (env ``LEAFLAB_WEBHOOK_*``)."""

from __future__ import annotations

from pydantic import Field

from services.common.settings import CommonSettings


class WebhookSettings(CommonSettings):
    # Like LEAFLAB_WEB_ALLOW: host:port pairs a delivery may reach although they are
    # loopback or private (a receiver on the lab's own network, a test's listener).
    webhook_allow: str = ""
    # How often each worker looks for due deliveries (a cheap partial-index query).
    webhook_poll_s: float = Field(default=1.0, gt=0)
    webhook_timeout_s: float = Field(default=10.0, gt=0)
    # Retries back off exponentially from the base, capped; after the last attempt
    # the delivery is marked failed and shown as such.
    webhook_max_attempts: int = Field(default=8, ge=1)
    webhook_backoff_base_s: float = Field(default=2.0, gt=0)
    webhook_backoff_max_s: float = Field(default=600.0, gt=0)
