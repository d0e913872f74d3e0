"""What crosses a process boundary, defined once (the model: Celery's ``states.py``).

- ``statuses``: a job's statuses as a ``StrEnum`` and the sets built from them,
  used in Python and inside SQL;
- ``errors``: the one JSON error shape of every HTTP service and its exception,
  ``ServiceError``;
- ``events``: the job events workers publish, a discriminated union of pydantic
  models, parsed by the CLI and written out for the browser (``write_js``);
- ``document_events``: a library document's ingestion events, the same way;
- ``keys``: every Redis key and stream name (stdlib only, like ``statuses``);
- ``sandbox``: ``SandboxResult``, the answer of one ``sandbox.exec`` to the agent worker.

Importing this package imports neither: ``statuses`` is stdlib-only so the CLI's
help text can use it without pydantic or SQLAlchemy.
"""
