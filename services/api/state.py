"""Typed application state, built once in the FastAPI lifespan."""

from __future__ import annotations

from dataclasses import dataclass

import redis
import redis.asyncio as aioredis
from celery import Celery
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.api.settings import ApiSettings


@dataclass
class AppState:
    settings: ApiSettings
    engine: Engine
    session_factory: sessionmaker[Session]
    redis: redis.Redis
    aredis: aioredis.Redis
    celery: Celery
