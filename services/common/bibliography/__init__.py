"""Bibliography files (BibTeX, CSL-JSON, Better BibTeX JSON) read into one
:class:`Entry` type, and collections written back as BibTeX (``writer``).

:func:`read_bibliography` decides the format from the content, never from the
file name: the API checks an upload with it before anything is stored.
"""

from services.common.bibliography.entry import (
    Entry,
    NotABibliography,
    ParsedBibliography,
    Skipped,
    normalise_title,
)
from services.common.bibliography.read import read_bibliography

__all__ = [
    "Entry",
    "NotABibliography",
    "ParsedBibliography",
    "Skipped",
    "normalise_title",
    "read_bibliography",
]
