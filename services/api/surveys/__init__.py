"""Surveys before they start: ``POST /v1/surveys/estimate``."""
