"""One metadata for every table, so Alembic sees them all and imports never cycle."""

from services.common.models.base import Base
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
from services.common.models.library import DOCUMENT_STATUSES, Document
from services.common.models.sandbox import SandboxExecution
from services.common.models.telemetry import SpanRecord
from services.common.models.users import ApiKey, Project, ProjectMember, User

__all__ = [
    "DOCUMENT_STATUSES",
    "JOB_KINDS",
    "JOB_STATUSES",
    "TERMINAL_STATUSES",
    "ApiKey",
    "Artifact",
    "Base",
    "ChatSession",
    "Document",
    "EmbeddingCacheEntry",
    "Job",
    "JobStep",
    "Message",
    "Project",
    "ProjectMember",
    "SandboxExecution",
    "SpanRecord",
    "User",
]
