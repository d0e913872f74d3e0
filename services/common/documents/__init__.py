"""Rules about library documents that the API and the library service share.

Both sides accept uploads (the API even while the library service is down), so
where a file lands, how it is named and which row it gets are data rules with
one owner here; parsing, embedding and search stay in ``services.library``.
"""
