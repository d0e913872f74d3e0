"""The worker's durable core: lease and fence, admission, the step ledger and its
recorder, events, finishing, dispatch by job kind, the model call and budget settlement.

Features (approvals, context, memory, survey, prompts) build on it and the drivers in
``runtime/`` on those; nothing here imports either (import-linter's worker-layers contract).
"""
