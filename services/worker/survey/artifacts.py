"""Writing a survey's files as job artifacts (Postgres rows, served by the API).

All files are written in one transaction under the job's fence: a worker that
lost the job writes none of them, and a rerun of assemble replaces them whole.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy.dialects.postgresql import insert

from services.common.models import Artifact
from services.worker.spine.lease import check_fence
from services.worker.survey.context import SurveyContext

MIME = {
    ".md": "text/markdown; charset=utf-8",
    ".tex": "application/x-tex",
    ".bib": "application/x-bibtex",
    ".json": "application/json",
}


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def store_artifacts(ctx: SurveyContext, files: dict[str, str]) -> list[dict[str, Any]]:
    """Upsert every file; returns ``[{name, size, sha256}]`` in name order."""
    listed = []
    with ctx.deps.factory() as db, db.begin():
        check_fence(db, ctx.lease)
        for name in sorted(files):
            content = files[name].encode()
            digest = hashlib.sha256(content).hexdigest()
            mime = MIME.get(name[name.rfind(".") :], "application/octet-stream")
            stmt = insert(Artifact).values(
                job_id=ctx.job.job_id,
                name=name,
                mime=mime,
                size=len(content),
                sha256=digest,
                content=content,
            )
            db.execute(
                stmt.on_conflict_do_update(
                    constraint="uq_artifacts_job_name",
                    set_={"mime": mime, "size": len(content), "sha256": digest, "content": content},
                )
            )
            listed.append({"name": name, "size": len(content), "sha256": digest})
    return listed
