"""Scholarly works from metadata services (OpenAlex, Crossref), parsed once for every part."""
