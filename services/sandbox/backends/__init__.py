"""Sandbox backends: the interface (``base``), Docker and bubblewrap engines, and a factory."""
