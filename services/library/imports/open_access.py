"""More places to fetch an imported entry's PDF from, found by the metadata lookup.

An entry that names no arXiv id and no PDF URL (most BibTeX entries: a DOI and a
title) may still have an open-access copy: OpenAlex knows it (``oa_url``), and a
record found by DOI or exact title may carry the arXiv id the file left out. The
lookup is the library's own (services/library/metadata/lookup.py): through the
address guard, never raising, off when lookups are off; each URL it gives is
fetched through the guard like any other source, and must be a PDF.
"""

from __future__ import annotations

from services.common.bibliography import Entry
from services.library.metadata.lookup import MetadataLookup


def looked_up_sources(
    lookup: MetadataLookup | None, entry: Entry, *, arxiv_base: str, known: list[str]
) -> list[str]:
    """The open-access URLs the lookup knows for ``entry`` that are not in ``known``."""
    if lookup is None or not (entry.doi or entry.title):
        return []
    found = lookup.find(
        doi=entry.doi,
        arxiv_id=entry.arxiv_id,
        title=entry.title,
        document=f"import entry {entry.key or entry.identity()}",
    )
    if found is None:
        return []
    sources = []
    if found.arxiv_id and not entry.arxiv_id:
        sources.append(f"{arxiv_base.rstrip('/')}/{found.arxiv_id}")
    if found.oa_url:
        sources.append(found.oa_url)
    return [url for url in dict.fromkeys(sources) if url not in known]
