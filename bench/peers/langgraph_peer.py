"""LangGraph 1.x: each job a five-node graph (model, tool, model, tool, model) whose
checkpoints go to ``PostgresSaver`` (the sync saver, on a psycopg pool).

``durability="sync"`` writes each step's checkpoint before the next step starts,
the guarantee the other durable systems give; LangGraph's default ("async") writes
it while the next step runs. ``options["durability"]`` chooses.
"""

from __future__ import annotations

from typing import TypedDict

from bench.peers.child import Batch, ChildArgs, run_threads, serve
from bench.peers.workload import STEPS, model_call, model_client, tool_call


class State(TypedDict):
    job: int
    outputs: list[str]


def prepare(args: ChildArgs) -> Batch:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.graph import END, START, StateGraph
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    client = model_client(args.sim_url)

    def node(n: int, kind: str):  # type: ignore[no-untyped-def]
        def run(state: State) -> State:
            output = model_call(client) if kind == "model" else tool_call(state["job"], n)
            return {"job": state["job"], "outputs": [*state["outputs"], output]}

        return run

    graph = StateGraph(State)
    names = [f"{kind}{n}" for n, kind in enumerate(STEPS)]
    for n, (name, kind) in enumerate(zip(names, STEPS, strict=True)):
        graph.add_node(name, node(n, kind))
    for before, after in zip([START, *names], [*names, END], strict=True):
        graph.add_edge(before, after)
    pool = ConnectionPool(
        args.dsn,
        min_size=1,
        max_size=args.pool,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=True,
    )
    # Its own connection, closed at once, so the migrations' rows are reported before
    # the batch (an idle pooled backend may hold its counts into the batch).
    with psycopg.connect(args.dsn, autocommit=True, row_factory=dict_row) as conn:
        PostgresSaver(conn).setup()  # type: ignore[arg-type]
    saver = PostgresSaver(pool)  # type: ignore[arg-type]
    app = graph.compile(checkpointer=saver)
    durability = args.options.get("durability", "sync")

    def job(number: int) -> None:
        config = {"configurable": {"thread_id": f"job-{number}"}}
        app.invoke({"job": number, "outputs": []}, config, durability=durability)  # type: ignore[arg-type]

    return lambda: run_threads(args, job)


if __name__ == "__main__":
    serve(prepare)
