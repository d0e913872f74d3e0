"""In-app notifications and per-user / per-project notification settings."""
