"""Leaflab's web pages, served by the API itself: login, chat, jobs, library, admin."""
