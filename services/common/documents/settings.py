"""Settings every process that accepts library documents reads (env prefix LEAFLAB_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from services.common.pdf_child.runner import ChildLimits
from services.common.settings import CommonSettings


class IntakeSettings(CommonSettings):
    # A lab's papers are often 5-30 MB; uploads stream to disk, so the cap
    # bounds disk use per request, not memory.
    max_upload_bytes: int = 100_000_000
    files_dir: Path | None = Field(
        default=None,
        description="content-addressed PDF store shared by the API and every ingest "
        "worker; default $LEAFLAB_HOME/library/files",
    )
    # Comma-separated host:port entries the URL fetcher may reach although they
    # are private or loopback (see services/common/net_guard.py).
    web_allow: str = ""
    # OpenAlex, for the agent's paper tools and the library's metadata lookup;
    # tests point it at a loopback server listed in web_allow. Its "polite
    # pool" (a contact address) and optional API key.
    openalex_base_url: str = "https://api.openalex.org"
    openalex_mailto: str | None = None
    openalex_api_key: str | None = None
    # A bibliography file (POST /v1/library/imports) is parsed in memory by the
    # API: 20 MB is some 50,000 BibTeX entries, far past any lab's library.
    max_import_bytes: int = 20_000_000
    # Zotero imports (services/api/library/zotero.py): the web API's base URL (a
    # loopback server in tests, listed in web_allow), the longest the API waits for
    # a whole library, Zotero's Backoff/Retry-After waits included, and the longest
    # single wait it accepts (asked for more, the import fails saying so).
    zotero_url: str = "https://api.zotero.org"
    zotero_timeout_s: float = Field(default=120.0, gt=0)
    zotero_max_wait_s: float = Field(default=30.0, ge=0)
    # PDFs read outside the library's parser pool — the upload check and the
    # agent's pdf_fetch — run in a one-shot child process under these limits
    # (services/common/pdf_child): address space, CPU and wall time per read,
    # and children at once per process.
    pdf_child_memory_mb: int = 1024
    pdf_check_timeout_s: float = 20.0
    pdf_text_timeout_s: float = 60.0
    pdf_child_concurrency: int = 2

    def pdf_check_limits(self) -> ChildLimits:
        """The upload check: opening the file only, so a short time."""
        return ChildLimits(
            self.pdf_child_memory_mb, self.pdf_check_timeout_s, self.pdf_child_concurrency
        )

    def pdf_text_limits(self) -> ChildLimits:
        return ChildLimits(
            self.pdf_child_memory_mb, self.pdf_text_timeout_s, self.pdf_child_concurrency
        )

    @property
    def resolved_files_dir(self) -> Path:
        return self.files_dir or (self.home / "library" / "files")
