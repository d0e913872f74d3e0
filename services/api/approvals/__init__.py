"""Approvals of gated tool calls: list a job's approvals, decide one."""
