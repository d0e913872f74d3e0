"""The worker's client for OpenAI-compatible model endpoints (vLLM first).

Streaming chat completions with native tool calls (or the JSON tool protocol),
typed errors that say whether a retry can help, retries with backoff honouring
Retry-After, token usage incl. cached tokens, and pricing for every call.
"""
