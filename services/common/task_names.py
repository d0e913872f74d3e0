"""Names the services agree on to talk through Celery (no service imports another)."""

ADVANCE_TASK = "agent.advance"
AGENT_QUEUE = "agent"
SANDBOX_EXEC_TASK = "sandbox.exec"
# After a session delete: remove its workspace (the sandbox re-checks the row).
SANDBOX_DROP_WORKSPACE_TASK = "sandbox.drop_workspace"
SANDBOX_QUEUE = "sandbox"
LIBRARY_INGEST_TASK = "library.ingest"
# Settle a bibliography import's pending entries (services/library/imports).
LIBRARY_IMPORT_TASK = "library.import"
LIBRARY_QUEUE = "library"
