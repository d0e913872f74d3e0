"""``GET /v1/traces/{trace_id}``: a job's spans, as Leaflab stored them."""

from services.api.traces.router import router

__all__ = ["router"]
