"""Notification delivery settings: webhooks (``LEAFLAB_WEBHOOK_*``), e-mail (``LEAFLAB_SMTP_*``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

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


class EmailSettings(CommonSettings):
    """E-mail notifications (env ``LEAFLAB_SMTP_*``); no host: e-mail is off."""

    smtp_host: str | None = None
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_from: str = "leaflab@localhost"
    smtp_user: str | None = None
    smtp_password: SecretStr | None = None
    # Upgrade the connection with STARTTLS before logging in (port 587 servers). The
    # server's certificate is verified (name and chain) against the system's CAs, or
    # only against ``smtp_ca_file`` (PEM) when set: a lab's own relay, a test's server.
    # A server that offers no STARTTLS, or a certificate that does not verify, is a
    # failed attempt (retried, then failed on the outbox row), never a plain-text send.
    smtp_starttls: bool = False
    smtp_ca_file: Path | None = None
    smtp_timeout_s: float = Field(default=10.0, gt=0)
    smtp_poll_s: float = Field(default=1.0, gt=0)
    smtp_max_attempts: int = Field(default=8, ge=1)
    smtp_backoff_base_s: float = Field(default=2.0, gt=0)
    smtp_backoff_max_s: float = Field(default=600.0, gt=0)
    # Where the e-mail's job link points: the address users open the web UI at.
    public_url: str = "http://127.0.0.1:8000"
