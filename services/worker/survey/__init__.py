"""The survey pipeline: plan → gather → read → outline → write → verify → assemble.

Each stage (and each paper note, section and verification inside one) is a
ledger step with a stable key, so a resumed survey replays what is done and
only runs what is not. ``runner.py`` sequences the stages.
"""
