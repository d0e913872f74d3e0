"""Invite links: an admin's one-time, expiring link for a member's own first key."""
