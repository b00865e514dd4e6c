"""Many documents extracted at once never abort the process (`nodes.ingestion.native`).

The ingestion branches of one message parse side by side in threads; libxml2 (trafilatura, lxml)
and PDFium entered from two threads at once may kill the process with a signal. The stress of
`tests.support.extraction_stress` runs in a child process, so a native crash shows as a signal
exit code instead of taking the test run down: 20 rounds, 8 threads, over the Debian project
history's 60 HTML pages (every other one through the link path), 3 PDFs (84 pages) and 2 EPUBs.
"""

from __future__ import annotations

import pytest

from tests.support.extraction_stress import history_documents, run_child
from tests.support.prerequisites import history_documents_missing, require


@pytest.mark.e2e
def test_extracting_many_documents_at_once_never_aborts() -> None:
    require(history_documents_missing())
    documents = history_documents()
    assert len(documents) >= 30
    outcome = run_child(documents, rounds=20, workers=8)
    assert not outcome.crashed, f"killed by {outcome.signal_name}:\n{outcome.tail}"
    assert outcome.returncode == 0, outcome.tail  # every round extracted the same
    assert "the same every round" in outcome.tail
