"""What the checked ``collection`` column type costs (services/common/models/collection_column.py):
writing and reading library rows through it, A/B against another tree (main).

    PYTHONPATH=$PWD .venv/bin/python -m bench.collection_column --base /work/main

One scratch database (dropped at the end). Each round runs one measuring
process per tree, alternating base / this tree, so load hits both alike; each
process inserts ``--rows`` documents with one executemany (every value bound
through the column type), reads them back as ORM objects (every value through
its result processor) and runs a filter ``collection IN (…)`` over 20
collections. Medians per tree over the rounds are printed next to each other.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ADMIN_URL = os.environ.get("LEAFLAB_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")


def _measure(url: str, rows: int) -> dict[str, float]:
    """One tree's timings (ms); runs in the child, under that tree's code."""
    from sqlalchemy import delete, insert, select

    from services.common.contracts.collections import Collection
    from services.common.db import build_engine, build_sessionmaker
    from services.common.models import Document, User

    engine = build_engine(url, pool_size=2)
    factory = build_sessionmaker(engine)
    with factory() as db, db.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:10]}@lab.test")
        db.add(user)
        db.flush()
        owner = user.id
    spread = [Collection.project(uuid.uuid4()) for _ in range(19)] + [Collection.personal(owner)]
    values = [
        {
            "id": uuid.uuid4(),
            "collection": spread[i % len(spread)],
            "owner_id": owner,
            "content_hash": uuid.uuid4().hex,
            "status": "ready",
        }
        for i in range(rows)
    ]
    out: dict[str, float] = {}
    with factory() as db, db.begin():
        t0 = time.perf_counter()
        db.execute(insert(Document), values)
        out["insert_ms"] = (time.perf_counter() - t0) * 1000
    with factory() as db:
        t0 = time.perf_counter()
        docs = db.scalars(select(Document).where(Document.owner_id == owner)).all()
        out["read_ms"] = (time.perf_counter() - t0) * 1000
        assert len(docs) == rows
        t0 = time.perf_counter()
        hashes = db.scalars(
            select(Document.content_hash).where(Document.collection.in_(spread))
        ).all()
        out["filter_ms"] = (time.perf_counter() - t0) * 1000
        assert len(hashes) >= rows
    with factory() as db, db.begin():
        db.execute(delete(Document).where(Document.owner_id == owner))
        db.execute(delete(User).where(User.id == owner))
    engine.dispose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", required=True, help="the other tree (e.g. /work/main)")
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.rows)))
        return 0

    from services.common.db import build_engine
    from services.common.models import Base
    from tests.fixtures.scratch import create_database, drop_database

    name = f"leaflab_bench_collection_{uuid.uuid4().hex[:8]}"
    url = create_database(ADMIN_URL, name)
    engine = build_engine(url, pool_size=1)
    Base.metadata.create_all(engine)  # the same DDL in both trees (VARCHAR(100))
    engine.dispose()
    trees = {"base": Path(args.base).resolve(), "this": Path.cwd().resolve()}
    got: dict[str, list[dict[str, float]]] = {"base": [], "this": []}
    try:
        for _ in range(args.rounds):
            for label, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                # This file run under the tree's code (the base need not have it).
                argv = [sys.executable, str(Path(__file__).resolve()), "--base", "-"]
                argv += ["--rows", str(args.rows), "--child", url]
                done = subprocess.run(
                    argv, cwd=tree, env=env, capture_output=True, text=True, check=True
                )
                got[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        drop_database(ADMIN_URL, name)
    print(f"rows {args.rows}, rounds {args.rounds}, load {os.getloadavg()[0]:.2f} at the end")
    print(f"| measure (median ms) | base ({trees['base']}) | this tree | change |")
    print("|---|---|---|---|")
    for key in ("insert_ms", "read_ms", "filter_ms"):
        base = statistics.median(r[key] for r in got["base"])
        this = statistics.median(r[key] for r in got["this"])
        print(f"| {key[:-3]} | {base:.1f} | {this:.1f} | {100 * (this - base) / base:+.0f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
