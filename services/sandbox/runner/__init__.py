"""The in-container runner (``sandbox_runner.py``, shipped read-only into each warm
container) and its host end (``channel.py``)."""
