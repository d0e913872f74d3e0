"""Names the services agree on to talk through Celery (no service imports another)."""

ADVANCE_TASK = "agent.advance"
AGENT_QUEUE = "agent"
SANDBOX_EXEC_TASK = "sandbox.exec"
SANDBOX_QUEUE = "sandbox"
LIBRARY_INGEST_TASK = "library.ingest"
LIBRARY_QUEUE = "library"
