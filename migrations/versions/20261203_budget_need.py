"""jobs.budget_need_usd / budget_need_tokens: what a budget-paused job's next call needs

The admin page shows it beside the budget's input: a limit below one call's worst
case can never run a call, and nothing said so.

Revision ID: budget_need
Revises: step_seq
Create Date: 2026-12-03 07:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "budget_need"
down_revision: str | None = "step_seq"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("budget_need_usd", sa.Numeric(14, 6), nullable=True))
    op.add_column("jobs", sa.Column("budget_need_tokens", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("jobs", "budget_need_tokens")
    op.drop_column("jobs", "budget_need_usd")
