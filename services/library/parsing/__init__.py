"""PDF parsing: structure extraction (pdf_structure) run in a limited child process (isolated)."""
