"""Notifications: webhook deliveries from the jobs' outbox (see dispatcher.py)."""
