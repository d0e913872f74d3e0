"""Bibliography imports on the library side: the ``library.import`` task settles an
import's pending entries one by one (``run``), matching them against the library
(``catalog``), fetching open-access PDFs and creating documents (``settle``), under
the import's lease (``lease``); the sweeper re-sends imports that stopped (``sweep``)."""
