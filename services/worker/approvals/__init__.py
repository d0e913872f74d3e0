"""Approvals: gated tool calls wait, holding no worker, for a human's decision."""
