"""Admin budgets and the spend ledger: ``/v1/admin/budgets`` and ``/v1/admin/spend``."""
