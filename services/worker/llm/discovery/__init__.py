"""Endpoint discovery: what each OpenAI-compatible endpoint accepts, found by cheap
probes once per endpoint, cached in Redis, configured values winning.

- ``discover(Target(...))`` → :class:`~services.worker.llm.capabilities.Capabilities`
- ``CapabilityBook``: the per-process cache and the getters handed to clients
- ``summary_lines(caps, endpoint, model)``: the text shown by ``leaflab up``
"""

from services.worker.llm.discovery.book import BookConfig, CapabilityBook
from services.worker.llm.discovery.configured import effective
from services.worker.llm.discovery.run import DiscoveryConfig, Target, discover
from services.worker.llm.discovery.summary import record_lines, summary_lines

__all__ = [
    "BookConfig",
    "CapabilityBook",
    "DiscoveryConfig",
    "Target",
    "discover",
    "effective",
    "record_lines",
    "summary_lines",
]
