"""Recurring jobs: a POST /v1/jobs body submitted on every slot of a cron expression."""
