"""Reading a PDF outside the calling process, under memory, CPU and wall-clock limits.

The agent worker's ``pdf_fetch`` and the API's upload check use it; the library's
parser pool (services/library/parsing/pool.py) shares its failure vocabulary.
"""
