"""Long-term memory: documents per user and project, the memory tool, maintenance."""
