"""Bubblewrap backend for machines without Docker."""
