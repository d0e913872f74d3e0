"""HTTP routes of the library service, one router per domain."""
