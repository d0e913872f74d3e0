"""The operations view of the admin dashboard: queues, workers, breakers, costly jobs."""
