"""DBOS 3.x: each job a workflow on a queue, each model and tool call a ``@DBOS.step``.

The jobs are enqueued on GO (DBOS writes each workflow's row then), so DBOS's
figures include creating its jobs, which Leaflab's do not (the runner creates
Leaflab's job rows before the clock starts). The queue polls Postgres every
``poll_s`` (DBOS's default 1 s), which bounds how soon an enqueued job starts; the
batch waits on each handle polling every 50 ms, as the Leaflab run polls its jobs
(those reads run in DBOS's process and database, so they are in its figures).
"""

from __future__ import annotations

from bench.peers.child import Batch, ChildArgs, serve
from bench.peers.workload import STEPS, model_call, model_client, tool_call

QUEUE = "bench-peers"
# How often the batch asks whether a job is done: as often as the Leaflab run asks.
WAIT_POLL_S = 0.05


def prepare(args: ChildArgs) -> Batch:
    from dbos import DBOS

    client = model_client(args.sim_url)

    @DBOS.step()
    def model_step() -> str:
        return model_call(client)

    @DBOS.step()
    def tool_step(number: int, n: int) -> str:
        return tool_call(number, n)

    @DBOS.workflow()
    def job(number: int) -> int:
        for n, kind in enumerate(STEPS):
            model_step() if kind == "model" else tool_step(number, n)
        return number

    DBOS(
        config={
            "name": "leaflab-bench-peers",
            "system_database_url": args.dsn,
            "sys_db_pool_size": args.pool,
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    DBOS.register_queue(
        QUEUE,
        worker_concurrency=args.threads,
        polling_interval_sec=float(args.options.get("poll_s", "1.0")),
    )

    def batch() -> int:
        handles = [DBOS.enqueue_workflow(QUEUE, job, i) for i in range(args.jobs)]
        failed = 0
        for handle in handles:
            try:
                handle.get_result(polling_interval_sec=WAIT_POLL_S)
            except Exception:  # noqa: BLE001 - counted; the batch goes on
                failed += 1
        return failed

    return batch


if __name__ == "__main__":
    serve(prepare)
