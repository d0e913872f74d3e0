"""Model routing: endpoint profiles, scene → tier → candidates, fallback, and a
circuit breaker per (endpoint, model) shared by every worker process via Redis."""
