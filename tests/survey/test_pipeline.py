"""A survey end to end over three shared PDFs in a member's library (scripted simulator).

One uninterrupted run is shared by the checks below (it is also the baseline the
kill -9 test compares its report with).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from services.worker.survey.keys import STAGES, conversation, item_key, stage_key
from tests.survey.conftest import SurveyStack
from tests.survey.scripts import (
    FABRICATED,
    FABRICATED_CLAIM,
    SUPPORTED_CLAIM,
    UNRELATED_CLAIM,
    UNSUPPORTED_CLAIM,
)
from tests.survey.survey_run import (
    Survey,
    bib_keys,
    block,
    cited_keys,
    events,
    step_keys,
)

ARTIFACTS = {"report.md", "report.tex", "references.bib", "papers.json", "notes.json"}


class TestSurveyEndToEnd:
    def test_it_succeeds_with_every_artifact(self, baseline: Survey) -> None:
        assert baseline.job["status"] == "succeeded", baseline.job
        assert set(baseline.files) == ARTIFACTS
        result = baseline.job["result"]
        # Only the claim drawn from its passage survives: the one the model calls
        # supported over two unrelated passages does not (test below).
        assert result["papers_found"] == 3 and result["papers_cited"] == 1
        assert result["needs_checking"] == 3
        assert baseline.job["cost_usd"] > 0 and baseline.job["usage"]["input_tokens"] > 0

    def test_every_citation_resolves_to_a_library_document(
        self, baseline: Survey, survey_stack: SurveyStack
    ) -> None:
        report = baseline.files["report.md"]
        cited = cited_keys(report)
        papers = json.loads(baseline.files["papers.json"])
        assert cited and cited == {p["key"] for p in papers}
        assert cited <= bib_keys(baseline.files["references.bib"])
        library = {d["id"] for d in survey_stack.documents}
        for paper in papers:
            assert paper["document_id"] in library, paper
            assert paper["title"] and paper["year"] and paper["locators"], paper
            for locator in paper["locators"]:
                assert locator["document_id"] == paper["document_id"]

    def test_references_carry_each_library_documents_metadata(
        self, baseline: Survey, survey_stack: SurveyStack
    ) -> None:
        """references.bib and the report's list use the authors, year and arXiv id
        ingestion extracted: full entries, no "Unknown authors", no "n.d.."."""
        bib = baseline.files["references.bib"]
        references = baseline.files["report.md"].partition("## References")[2]
        # Ingestion found authors for the shared PDFs that have an author block.
        with_authors = [d for d in survey_stack.documents if d["authors"]]
        assert len(with_authors) >= 2, survey_stack.documents
        # Only cited papers are listed (papers.json, references.bib): each carries
        # the metadata of its library document.
        documents = {d["id"]: d for d in survey_stack.documents}
        cited = json.loads(baseline.files["papers.json"])
        assert cited
        for paper in cited:
            doc = documents[paper["document_id"]]
            if doc.get("authors"):
                assert " and ".join(doc["authors"][:2]) in bib, (doc, bib)
                assert ", ".join(doc["authors"][:2]) in references
            if doc.get("year"):
                assert str(doc["year"]) in references
            if doc.get("arxiv_id"):
                assert f"eprint = {{{doc['arxiv_id']}}}" in bib
                assert "archivePrefix = {arXiv}" in bib
        assert "Unknown" not in bib and "Unknown authors" not in references
        assert "n.d.." not in references and ".." not in references.replace("...", "")

    def test_a_fabricated_citation_and_an_unsupported_claim_are_moved_to_needs_checking(
        self, baseline: Survey
    ) -> None:
        report = baseline.files["report.md"]
        body, _, rest = report.partition("## Needs checking")
        needs_checking = rest.partition("## References")[0]
        assert FABRICATED not in cited_keys(report)
        assert FABRICATED not in baseline.files["references.bib"]
        assert FABRICATED_CLAIM not in body and UNSUPPORTED_CLAIM not in body
        assert FABRICATED_CLAIM in needs_checking and f"`{FABRICATED}`" in needs_checking
        assert "does not resolve" in needs_checking
        assert UNSUPPORTED_CLAIM in needs_checking and "not supported" in needs_checking

    def test_a_claim_the_model_calls_supported_over_unrelated_passages_needs_checking(
        self, baseline: Survey
    ) -> None:
        report = baseline.files["report.md"]
        body, _, rest = report.partition("## Needs checking")
        needs_checking = rest.partition("## Citation checks")[0]
        assert UNRELATED_CLAIM not in body
        (line,) = [ln for ln in needs_checking.splitlines() if UNRELATED_CLAIM in ln]
        assert "share no content word with the claim" in line
        assert "the model judged it" not in line  # the model said supported

    def test_the_report_says_which_checks_each_citation_passed_and_which_model(
        self, baseline: Survey
    ) -> None:
        report = baseline.files["report.md"]
        body, _, rest = report.partition("## Citation checks")
        checks = rest.partition("## References")[0]
        assert SUPPORTED_CLAIM in body.partition("## Needs checking")[0]
        assert "Written by leaflab-sim; verified by leaflab-sim" in checks
        # The library answered: the embedding check ran (no lexical-only fallback).
        assert "embedding similarity" in checks and "lexical-only" not in checks
        head, kept = block(checks, SUPPORTED_CLAIM)
        assert ": cited, score" in head
        assert ": supports it, score" in kept
        assert "lexical ✓" in kept and "embedding ✓" in kept and "model ✓" in kept
        head, *unrelated = block(checks, UNRELATED_CLAIM)
        assert ": needs checking" in head and len(unrelated) == 2  # one line per cited key
        assert all("does not support it alone" in ln and "lexical ✗" in ln for ln in unrelated)

    def test_notes_carry_locators(self, baseline: Survey, survey_stack: SurveyStack) -> None:
        notes = json.loads(baseline.files["notes.json"])
        assert len(notes) == 3
        library = {d["id"] for d in survey_stack.documents}
        for note in notes:
            for field in ("problem", "method", "assumptions", "results", "limitations"):
                assert note[field], (field, note)
            (locator,) = note["locators"]
            assert locator["document_id"] in library
            assert locator["page"] is not None and locator["locator"]

    def test_each_stage_and_unit_is_a_ledger_step(
        self,
        baseline: Survey,
        survey_stack: SurveyStack,
        session_factory: sessionmaker[Session],
    ) -> None:
        keys = step_keys(session_factory, baseline.job_id)
        assert {stage_key(s) for s in STAGES} <= set(keys)
        papers = json.loads(baseline.files["papers.json"])
        for paper in papers:
            assert keys[item_key("read", paper["key"])].executions == 1
        assert {item_key("write", "0"), item_key("verify", "1")} <= set(keys)
        # The plan's first reply was not JSON: exactly one repair request followed.
        plan_requests = survey_stack.sim_requests(conversation(baseline.session_id, "plan"))
        assert [r["slot"] for r in plan_requests] == [0, 1]
        assert "not valid for the schema" in plan_requests[1]["messages"][-1]["content"]
        # Sent with bounds that fit the reply's tokens (services/worker/survey/reply_fit.py).
        sent = plan_requests[0]["response_format"]["json_schema"]["schema"]
        questions = sent["properties"]["research_questions"]
        assert questions["maxItems"] >= 1 and questions["items"]["maxLength"] >= 24, sent

    def test_progress_is_on_the_events_stream(
        self, baseline: Survey, survey_stack: SurveyStack
    ) -> None:
        with survey_stack.client() as client:
            progress = [
                e["data"] for e in events(client, baseline.job_id) if e.get("event") == "progress"
            ]
        stages = [p["stage"] for p in progress]
        for stage in ("plan", "gather", "read", "outline", "write", "verify", "assemble"):
            assert stage in stages
        last = progress[-1]
        assert last["papers_found"] == 3 and last["papers_read"] == 3
        assert last["sections_total"] == 2 and last["sections_written"] == 2
        assert last["cost_usd"] > 0

    def test_the_tex_compiles_with_its_bibliography(self, baseline: Survey, tmp_path: Path) -> None:
        pdflatex, bibtex = shutil.which("pdflatex"), shutil.which("bibtex")
        assert pdflatex and bibtex, "run scripts/ensure_latex.sh (texlive-latex-base)"
        for name in ("report.tex", "references.bib"):
            (tmp_path / name).write_text(baseline.files[name])
        run = {"cwd": tmp_path, "capture_output": True, "text": True, "timeout": 120}
        for argv in (
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
            [bibtex, "report"],
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
            [pdflatex, "-interaction=nonstopmode", "-halt-on-error", "report.tex"],
        ):
            done = subprocess.run(argv, check=False, **run)  # noqa: S603
            assert done.returncode == 0, done.stdout[-3000:]
        log = (tmp_path / "report.log").read_text(errors="replace")
        assert "undefined" not in log.lower(), log[-2000:]
        assert (tmp_path / "report.pdf").stat().st_size > 1000
        # One entry per cited paper (one survives verify, see the first test).
        assert len((tmp_path / "report.bbl").read_text().split("\\bibitem")) == 2
