"""Bibliographic metadata of a library document: who wrote it, when, where, and
its identifiers (DOI, arXiv id, PubMed id), each field with the source it came
from ("pdf", "layout", "text", "filename", "openalex", "manual").

``extract`` runs inside the parsing child (PyMuPDF only); ``apply`` merges the
result into the document row without ever overwriting a manual correction and
marks DOI / arXiv duplicates.
"""
