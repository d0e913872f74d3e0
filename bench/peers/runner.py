"""Run the same workload on Leaflab, DBOS, LangGraph and the two floors, alternately.

    .venv/bin/python -m bench.peers [--jobs 100 --rounds 2 --latency-ms 300]

Each round runs every system once, in an order rotated by one each round, so no
system always runs first (on a cold cache) or last. Every run gets a new scratch
database, dropped afterwards, and a freshly started worker process with
``--threads`` threads. One simulator serves all of them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import secrets
import tempfile
from pathlib import Path

# Only what --help needs is imported at the top: the rest pulls in the services.

SYSTEMS = ("leaflab", "dbos", "langgraph", "floor1", "floor2")
# The worker module of each system that runs as a child, and its options.
CHILDREN = {
    "dbos": "bench.peers.dbos_peer",
    "langgraph": "bench.peers.langgraph_peer",
    "floor1": "bench.peers.floors",
    "floor2": "bench.peers.floors",
}
# The bench extra's packages each peer needs (pyproject.toml, optional-dependencies).
NEEDS = {"dbos": ("dbos",), "langgraph": ("langgraph", "langgraph.checkpoint.postgres")}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency-ms", type=int, default=300, help="simulated model latency")
    parser.add_argument("--threads", type=int, default=0, help="worker threads (default: --jobs)")
    parser.add_argument("--pool", type=int, default=40, help="database connections per worker")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset")
    parser.add_argument("--dbos-poll-s", default="1.0", help="DBOS queue polling interval")
    parser.add_argument("--langgraph-durability", default="sync", choices=("sync", "async", "exit"))
    return parser


def missing(system: str) -> str | None:
    """Why ``system`` cannot run here (its package is not installed), or None."""
    for module in NEEDS.get(system, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"{module} is not installed (pip install -e '.[bench]')"
    return None


def main() -> None:
    args = _parser().parse_args()
    args.threads = args.threads or args.jobs
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        raise SystemExit(f"unknown system(s): {', '.join(sorted(unknown))}")
    runnable = []
    for system in systems:
        why = missing(system)
        if why:
            print(f"{system}: skipped: {why}", flush=True)
        else:
            runnable.append(system)
    _run(runnable, args)


def _run(systems: list[str], args: argparse.Namespace) -> None:
    import httpx

    from bench.peers.leaflab import leaflab_script
    from bench.peers.report import report
    from bench.peers.workload import PEERS_KEY, STEPS, simulator_script
    from services.cli.up.commands import model_sim_argv
    from tests.fixtures.processes import Proc, free_port, wait_http

    logs = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    script = logs / "script.json"
    script.write_text(json.dumps(leaflab_script(args.latency_ms)))
    port = free_port()
    sim = Proc("sim", model_sim_argv(port=port, script=str(script)), {}, logs)
    sim_url = f"http://127.0.0.1:{port}"
    load_before = _loadavg()
    rounds = []
    try:
        wait_http(f"{sim_url}/healthz", sim)
        httpx.put(f"{sim_url}/_sim/scripts/{PEERS_KEY}", json=simulator_script(args.latency_ms))
        for number in range(args.rounds):
            order = systems[number % len(systems) :] + systems[: number % len(systems)]
            runs = {}
            for system in order:
                runs[system] = _one(system, sim_url, args, logs)
                print(f"round {number + 1}: {system} {runs[system].makespan:.2f} s", flush=True)
            rounds.append(runs)
    finally:
        sim.stop()
    calls, tools = STEPS.count("model"), STEPS.count("tool")
    report(
        rounds,
        f"{args.jobs} jobs x ({calls} model calls at {args.latency_ms} ms + {tools} tool calls), "
        f"{args.threads} threads, pool {args.pool}, {args.rounds} round(s); load average "
        f"before {load_before}, after {_loadavg()}; DBOS poll {args.dbos_poll_s} s, "
        f"LangGraph durability {args.langgraph_durability}; logs {logs}",
    )


def _one(system: str, sim_url: str, args: argparse.Namespace, logs: Path):  # type: ignore[no-untyped-def]
    from bench.peers.child import ChildArgs
    from bench.peers.leaflab import run_leaflab
    from bench.peers.measure import libpq_url, run_child
    from bench.scratch_stack import PG_ADMIN
    from tests.fixtures.scratch import create_database, drop_database

    if system == "leaflab":
        return run_leaflab(sim_url, args.jobs, args.threads, args.pool, logs)
    options = {
        "dbos": {"poll_s": args.dbos_poll_s},
        "langgraph": {"durability": args.langgraph_durability},
        "floor1": {"durable": "1"},
    }.get(system, {})
    name = f"leaflab_bench_peers_{system}_{os.getpid()}_{secrets.token_hex(3)}"
    dsn = libpq_url(create_database(PG_ADMIN, name))
    try:
        child = ChildArgs(dsn, sim_url, args.jobs, args.threads, args.pool, options)
        return run_child(system, CHILDREN[system], child, name, logs)
    finally:
        drop_database(PG_ADMIN, name)


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
