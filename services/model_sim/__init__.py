"""An OpenAI-compatible server that plays scripted replies (latency, faults, streaming).

Tests, demos and benchmarks run against it instead of a GPU-served model.
"""
