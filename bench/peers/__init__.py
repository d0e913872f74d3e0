"""The durable step beside its peers (issue 29 goal 1): one workload, five systems.

Each job is 3 model calls (HTTP to Leaflab's model simulator at a set latency)
and 2 tool calls (a trivial local function), run on Leaflab, on DBOS (a queue and
``@DBOS.step``), on LangGraph with ``PostgresSaver``, on floor 1 (one autocommitted
INSERT per step) and on floor 2 (no durability). Each system gets its own scratch
database on the shared local Postgres and the same thread count; systems run one
at a time, alternating over rounds, and the runner prints medians and paired
ratios. See ``python -m bench.peers --help``; DBOS and LangGraph need the
``bench`` extra (``pip install -e '.[bench]'``) and are skipped without it.

Nothing here is imported by the default test suite.
"""
