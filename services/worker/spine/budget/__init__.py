"""Budgets that never overspend: reserve the worst case before a model call, settle after.

``reservation`` holds the SQL (reserve, settle, release orphans), ``gate`` is
what a turn calls around each model call, ``pause`` parks a job whose budget
is exhausted without holding a worker.
"""
