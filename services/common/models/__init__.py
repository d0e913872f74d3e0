"""One metadata for every table, so Alembic sees them all and imports never cycle."""

from services.common.models.approvals import APPROVAL_STATUSES, Approval
from services.common.models.base import Base
from services.common.models.budgets import (
    BUDGET_PERIODS,
    Budget,
    BudgetOverrun,
    BudgetReservation,
    SpendRecord,
)
from services.common.models.conversations import ChatSession, Message
from services.common.models.embedding_cache import EmbeddingCacheEntry
from services.common.models.jobs import (
    JOB_KINDS,
    JOB_STATUSES,
    TERMINAL_STATUSES,
    Artifact,
    Job,
    JobStep,
)
from services.common.models.library import DOCUMENT_STATUSES, Document, DocumentReference
from services.common.models.library_imports import LibraryImport, LibraryImportEntry
from services.common.models.mcp_servers import McpServerList
from services.common.models.memory import (
    MEMORY_KINDS,
    MEMORY_SCOPES,
    PROPOSAL_STATUSES,
    MemoryDocument,
    MemoryProposal,
)
from services.common.models.notifications import (
    DELIVERY_STATUSES,
    EMAIL_STATUSES,
    NOTIFY_EVENTS,
    WEBHOOK_EVENTS,
    EmailDelivery,
    Notification,
    NotificationSettings,
    Webhook,
    WebhookDelivery,
)
from services.common.models.sandbox import SandboxExecution
from services.common.models.schedules import Schedule
from services.common.models.telemetry import SpanRecord
from services.common.models.users import ApiKey, Invite, Project, ProjectMember, User

__all__ = [
    "McpServerList",
    "APPROVAL_STATUSES",
    "BUDGET_PERIODS",
    "Budget",
    "Invite",
    "BudgetOverrun",
    "BudgetReservation",
    "SpendRecord",
    "DOCUMENT_STATUSES",
    "JOB_KINDS",
    "JOB_STATUSES",
    "MEMORY_KINDS",
    "MEMORY_SCOPES",
    "PROPOSAL_STATUSES",
    "TERMINAL_STATUSES",
    "ApiKey",
    "Approval",
    "Artifact",
    "Base",
    "ChatSession",
    "Document",
    "DocumentReference",
    "LibraryImport",
    "LibraryImportEntry",
    "EmbeddingCacheEntry",
    "Job",
    "JobStep",
    "MemoryDocument",
    "MemoryProposal",
    "Message",
    "Project",
    "ProjectMember",
    "SandboxExecution",
    "Schedule",
    "SpanRecord",
    "User",
    "DELIVERY_STATUSES",
    "WEBHOOK_EVENTS",
    "EMAIL_STATUSES",
    "NOTIFY_EVENTS",
    "EmailDelivery",
    "Notification",
    "NotificationSettings",
    "Webhook",
    "WebhookDelivery",
]
