"""Notifications: webhook and e-mail deliveries from the jobs' outboxes (see dispatcher.py)."""
