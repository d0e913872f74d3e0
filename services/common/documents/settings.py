"""Settings every process that accepts library documents reads (env prefix LEAFLAB_)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

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

    @property
    def resolved_files_dir(self) -> Path:
        return self.files_dir or (self.home / "library" / "files")
