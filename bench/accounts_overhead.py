"""What accounts add to each request and each job start, with baselines from the same run.

- Authentication: a salted key found by its prefix among ``--keys`` keys, then a
  constant-time hash comparison — against the old single lookup by an unsalted
  hash (baseline). Each check is its own transaction, as in a request.
- Rate limit: one token-bucket script call in Redis — against a Redis PING.
- Admission: taking a queued job's lease with the per-user cap on (pre-check,
  per-user advisory lock, capped UPDATE) — against the cap off.

    .venv/bin/python -m bench.accounts_overhead [--keys 1000 --checks 500 --jobs 200]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable

import redis
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session, sessionmaker

from bench.harness import percentile
from bench.scratch_stack import scratch_stack
from services.api.api_keys import authenticate, issue_key, legacy_hash
from services.api.rate_limits import TokenBucket
from services.common.db import build_engine, build_sessionmaker
from services.common.models import ApiKey, Job, User
from services.common.turns import JobOrigin, create_queued_job
from services.worker.spine.lease import acquire


def _ms(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _fig(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 3), "p95_ms": round(percentile(values, 95), 3)}


def _keys(factory: sessionmaker[Session], n: int) -> tuple[str, str]:
    """``n`` salted keys (returns the last), and one stored the old way."""
    with factory() as db, db.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        key = ""
        for _ in range(n):
            _, key = issue_key(db, user=user)
        legacy = "lf_" + uuid.uuid4().hex + uuid.uuid4().hex
        db.add(ApiKey(user_id=user.id, key_hash=legacy_hash(legacy), prefix=legacy[:10]))
    return key, legacy


def _auth(factory: sessionmaker[Session], key: str) -> None:
    with factory() as db, db.begin():
        authenticate(db, key=key)


def _old_lookup(factory: sessionmaker[Session], key: str) -> None:
    with factory() as db, db.begin():
        db.execute(
            select(ApiKey, User)
            .join(User, User.id == ApiKey.user_id)
            .where(ApiKey.key_hash == legacy_hash(key))
        ).first()


def _engine_of(factory: sessionmaker[Session]) -> Engine:
    engine = factory.kw["bind"]
    assert isinstance(engine, Engine)
    return engine


def _admission(factory: sessionmaker[Session], n: int, cap: int) -> list[float]:
    with factory() as db, db.begin():
        user = User(email=f"bench-{uuid.uuid4().hex[:8]}@lab.test")
        db.add(user)
        db.flush()
        ids = [
            create_queued_job(
                db,
                origin=JobOrigin(user_id=user.id),
                kind="turn",
                job_input={"content": "x"},
                session=None,
                max_turns=1,
            ).id
            for _ in range(n)
        ]
    out = []
    for job_id in ids:
        start = time.perf_counter()
        lease = acquire(
            _engine_of(factory), job_id=job_id, owner="bench", ttl_s=30, per_user_cap=cap
        )
        out.append((time.perf_counter() - start) * 1000)
        assert lease is not None
        with factory() as db, db.begin():  # finish it, so the next one has a free slot
            db.execute(update(Job).where(Job.id == job_id).values(status="succeeded"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--checks", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    with scratch_stack("accounts") as stack:
        engine = build_engine(stack.database_url, pool_size=2)
        factory = build_sessionmaker(engine)
        key, legacy = _keys(factory, args.keys)
        _auth(factory, key)  # warm: connection, statement cache, last_used_at
        salted = _ms(lambda: _auth(factory, key), args.checks)
        legacy_auth = _ms(lambda: _auth(factory, legacy), args.checks)
        baseline_auth = _ms(lambda: _old_lookup(factory, legacy), args.checks)
        client = redis.Redis.from_url(stack.redis_url)
        bucket = TokenBucket(client, rate_per_s=1e6, burst=1_000_000)
        key_id = uuid.uuid4()
        bucket.take(key_id)
        limited = _ms(lambda: bucket.take(key_id), args.checks)
        ping = _ms(client.ping, args.checks)
        capped = _admission(factory, args.jobs, cap=8)
        uncapped = _admission(factory, args.jobs, cap=0)
        engine.dispose()
    figures = {
        "keys_stored": args.keys + 1,
        "auth_salted_prefix_lookup": _fig(salted),
        "auth_legacy_key": _fig(legacy_auth),
        "baseline_old_unsalted_lookup": _fig(baseline_auth),
        "rate_limit_take": _fig(limited),
        "baseline_redis_ping": _fig(ping),
        "acquire_queued_cap_on": _fig(capped),
        "baseline_acquire_cap_off": _fig(uncapped),
    }
    for name, value in figures.items():
        print(f"{name}: {value}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
