"""``/v1/webhooks``: a user's and a project's job notifications."""
