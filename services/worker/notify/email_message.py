"""One notification e-mail from a delivery's snapshot: subject, plain-text body, headers.

Guarantees: a job's title (model- or user-written) never becomes a header — every
control character (CR and LF included) is replaced before it reaches the
Subject, and the message is built with ``email.policy.SMTP``, which refuses a
header value with a line break anyway. The Message-ID is derived from the
delivery's id, so a resend after a lost answer is recognisable as the same
message. The body holds the job's kind, title, status, cost and link; no
secrets, no error text (the job page shows that to those who may read it).
"""

from __future__ import annotations

import uuid
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate
from typing import Any

SUBJECT_TITLE_MAX = 80
BODY_TITLE_MAX = 300

STATUS_WORDS = {
    "succeeded": "succeeded",
    "failed": "failed",
    "waiting_approval": "is waiting for your approval",
    "budget_exhausted": "paused: the budget is used up",
}


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, control characters as spaces, at most ``limit`` characters."""
    flat = "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def message_id(delivery_id: uuid.UUID, sender: str) -> str:
    domain = sender.rpartition("@")[2] or "leaflab"
    return f"<leaflab-{delivery_id}@{one_line(domain, 200).replace(' ', '')}>"


def job_link(public_url: str, job_id: uuid.UUID) -> str:
    return f"{public_url.rstrip('/')}/jobs/{job_id}"


def compose(
    *,
    delivery_id: uuid.UUID,
    job_id: uuid.UUID,
    to_address: str,
    snapshot: dict[str, Any],
    sender: str,
    public_url: str,
) -> EmailMessage:
    status = str(snapshot.get("status", ""))
    kind = one_line(str(snapshot.get("kind", "job")), 40)
    title = str(snapshot.get("title") or kind)
    words = STATUS_WORDS.get(status, one_line(status, 40))
    link = job_link(public_url, job_id)
    cost = float(snapshot.get("cost_usd") or 0)
    msg = EmailMessage(policy=SMTP)
    msg["From"] = sender
    msg["To"] = to_address
    msg["Subject"] = f"[Leaflab] {kind} {words}: {one_line(title, SUBJECT_TITLE_MAX)}"
    msg["Date"] = formatdate(localtime=False)
    msg["Message-ID"] = message_id(delivery_id, sender)
    msg["Auto-Submitted"] = "auto-generated"  # RFC 3834: vacation replies stay away
    msg["X-Leaflab-Delivery"] = str(delivery_id)
    msg.set_content(
        "\n".join(
            [
                f"Your Leaflab {kind} {words}.",
                "",
                f"Title:  {one_line(title, BODY_TITLE_MAX)}",
                f"Kind:   {kind}",
                f"Status: {one_line(status, 40)}",
                f"Cost:   ${cost:.4f}",
                "",
                f"Open the job: {link}",
                "",
                "You get this e-mail because of your (or your project's) notification",
                "settings; change them with `leaflab notify settings` or on the Jobs page.",
            ]
        )
    )
    return msg
