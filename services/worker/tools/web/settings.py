"""Settings of the research tools: search APIs, fetch caps (env prefix ``LEAFLAB_``).

Subclasses the document-intake settings, so the tools share ``web_allow`` (the
address guard's exemptions) and the library's file store with the API's URL
ingestion instead of defining them twice. The base URLs default to the real
services; tests point them at a loopback server listed in ``LEAFLAB_WEB_ALLOW``.
"""

from __future__ import annotations

from services.common.documents.settings import IntakeSettings
from services.common.net_guard import NetGuard, parse_allow_list


class ResearchToolSettings(IntakeSettings):
    brave_api_key: str | None = None
    brave_base_url: str = "https://api.search.brave.com/res/v1"
    # openalex_base_url, openalex_mailto, openalex_api_key: IntakeSettings (the
    # library's metadata lookup calls OpenAlex too).
    # One page or API answer; PDFs get their own, larger cap.
    web_fetch_max_bytes: int = 5_000_000
    pdf_fetch_max_bytes: int = 50_000_000
    web_fetch_timeout_s: float = 20.0
    # What the model reads of one page or PDF (characters).
    web_text_max_chars: int = 40_000

    def net_guard(self) -> NetGuard:
        return NetGuard(parse_allow_list(self.web_allow))
