"""The guarantee mutations: each breaks one guarantee on purpose, and names the
tests that must go red when it is broken.

A mutation is an exact text replacement (``old`` must occur exactly once in
``path``, so a mutation that no longer matches the code fails loudly instead
of silently testing nothing). ``tests`` are pytest arguments: the smallest
selection that protects the guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "library references ignore the key's project scope",
        "services/api/library/router.py",
        "    ident = await _readable_id(db, access, document_id)\n"
        '    path = internal_path("documents", ident, "references")',
        "    ident = str(uuid.UUID(document_id))\n"
        '    path = internal_path("documents", ident, "references")',
        ("tests/api/test_authz_matrix.py", "-k", "scoped"),
    ),
    Mutation(
        "ownership: any signed-in user reads any object",
        "services/api/access.py",
        "    return owner_id == user.id or role in PROJECT_ROLES",
        "    return True",
        ("tests/api/test_authz_matrix.py", "-k", "another_users"),
    ),
    Mutation(
        "URL form: httpx's parse (brackets, IDNA) skipped",
        "services/common/net_addresses.py",
        "        _ = httpx.URL(url).host",
        "        pass",
        ("tests/library/test_net_guard.py", "-k", "Malformed"),
    ),
    Mutation(
        "SSRF guard: resolved addresses not checked",
        "services/common/net_guard.py",
        "        if self.allowed(host, port):\n            return addresses\n        for address",
        "        return addresses\n        for address",
        ("tests/library/test_net_guard.py", "-k", "direct_forms"),
    ),
    Mutation(
        "open event streams never re-check access",
        "services/api/events/stream_follow.py",
        "            refused = await stream.still_allowed()",
        "            refused = None",
        ("tests/api/test_stream_revocation.py", "-k", "Job and a_revoked_key"),
    ),
    Mutation(
        "a removed member keeps her project objects",
        "services/api/access.py",
        "    if role is None:  # not (or no longer) a member of the object's project\n"
        "        return False\n",
        "",
        ("tests/api/test_membership_now.py",),
    ),
    Mutation(
        "rate limit per key only (no user bucket)",
        "services/api/rate_limits.py",
        "        Bucket("
        '"user", USER_BUCKET_KEY.format(user_id=caller.user.id), user_rate, user_burst),\n',
        "",
        ("tests/api/test_rate_limits.py", "-k", "several_keys"),
    ),
    Mutation(
        "API /metrics open to anyone",
        "services/api/metrics_access.py",
        '        if token and token_matches(request.headers.get("authorization"), token):',
        "        if True:",
        ("tests/api/test_metrics_access.py", "-k", "admins"),
    ),
    Mutation(
        "uploads with a %PDF- header are stored unopened",
        "services/common/documents/intake.py",
        "        if not await asyncio.to_thread(_opens_as_pdf, staged, check):",
        "        if False:",
        ("tests/library/test_uploads.py", "-k", "fakes"),
    ),
    Mutation(
        "?all=true lists every user's jobs for anyone",
        "services/api/jobs/router.py",
        "    elif owner is None and not (user.is_admin and all_users):",
        "    elif owner is None and not all_users:",
        ("tests/api/test_access_guarantees.py", "-k", "all_true"),
    ),
    Mutation(
        "a disabled user's keys keep working",
        "services/api/api_keys.py",
        "    if user.disabled:",
        "    if False:",
        ("tests/api/test_access_guarantees.py", "-k", "disabled"),
    ),
    Mutation(
        "an approval decided through another job",
        "services/api/approvals/service.py",
        "select(Approval).where(Approval.id == approval_id, Approval.job_id == job.id)",
        "select(Approval).where(Approval.id == approval_id)",
        ("tests/api/test_access_guarantees.py", "-k", "own_job"),
    ),
    Mutation(
        "CSRF: any non-empty token accepted",
        "services/api/web/cookie_auth.py",
        '    return bool(presented) and hmac.compare_digest(presented or "", session.csrf)',
        "    return bool(presented)",
        ("tests/api/test_csrf.py", "-k", "wrong_non_empty"),
    ),
    Mutation(
        "logout without its CSRF token",
        "services/api/web/login.py",
        "        if not hmac.compare_digest(session.csrf, csrf_token):",
        "        if False:",
        ("tests/api/test_csrf.py", "-k", "logout"),
    ),
    Mutation(
        "survey: a deleted library document still resolves",
        "services/worker/survey/citations.py",
        '            gone = uuid.UUID(paper["document_id"]) not in present',
        "            gone = False",
        ("tests/survey/test_resolving.py",),
    ),
    Mutation(
        "approvals: protected suffixes matched case-sensitively",
        "services/worker/approvals/protected.py",
        "        if any(lowered.endswith(s) for s in self.suffixes):",
        "        if any(path.endswith(s) for s in self.suffixes):",
        ("tests/worker/approvals/test_round_trips.py", "-k", "case"),
    ),
    Mutation(
        "library search ignores the project asked for",
        "services/api/library/router.py",
        '        params["collection"] = access.collection_for(project)',
        "        access.collection_for(project)",
        ("tests/library/test_router.py", "-k", "SearchFilter"),
    ),
    Mutation(
        "failpoints: configure(None) keeps what was set",
        "services/common/failpoints.py",
        '    _active = parse(spec or "")',
        "    _active = parse(spec) if spec else _active",
        ("tests/worker/test_failpoint_spec.py", "-k", "unset"),
    ),
    Mutation(
        "project memory: a member's write lands without an owner",
        "services/worker/memory/tool.py",
        'if args.scope == "project" and not access.owns_project:',
        "if False:",
        ("tests/worker/test_memory_tool_access.py", "-k", "member_proposes"),
    ),
    Mutation(
        "project memory: a member decides proposals",
        "services/api/memory/router.py",
        "    if not user.is_admin and project_role(db, user_id=user.id, project_id=project.id)"
        ' != "owner":',
        "    if False:",
        ("tests/worker/test_project_memory.py", "-k", "held_then_approved"),
    ),
    Mutation(
        "memory enters the prompt unquoted",
        "services/worker/memory/documents.py",
        'QUOTE = "> "',
        'QUOTE = ""',
        ("tests/worker/test_memory_tool_access.py", "-k", "Quoted"),
    ),
    Mutation(
        "memory tool: access not re-checked at each call",
        "services/worker/memory/tool.py",
        "            if access.revoked is not None:",
        "            if False:",
        ("tests/worker/test_memory_tool_access.py", "-k", "no_access"),
    ),
    Mutation(
        "a running job goes on after its user lost access",
        "services/worker/runtime/turn.py",
        "if (stop := stop_if_revoked(self.deps, self.lease, self.events, self.who)) is not None:",
        "if (stop := None) is not None:",
        ("tests/worker/test_project_memory.py", "-k", "running_job and removed"),
    ),
    Mutation(
        "disk: the measure after an exec takes nothing back",
        "services/sandbox/quota.py",
        "    if now <= allowed.limit and killed_reason != QUOTA_KILL:",
        "    if True:",
        ("tests/sandbox/test_disk_caps.py", "-k", "third"),
    ),
    Mutation(
        "disk: the poll during an exec ignores the absolute limit",
        "services/sandbox/backends/docker/backend.py",
        "if used - base > quota or (limit is not None and used > limit):",
        "if used - base > quota:",
        ("tests/sandbox/test_disk_caps.py", "-k", "slow_filler"),
    ),
    Mutation(
        "disk: a full workspace is not refused",
        "services/sandbox/quota.py",
        "        if self.workspace_bytes >= self.workspace_cap:",
        "        if False:",
        ("tests/sandbox/test_disk_caps.py", "-k", "third"),
    ),
    Mutation(
        "disk: the user's total is not checked",
        "services/sandbox/quota.py",
        "        elif self.user_bytes >= self.user_cap:",
        "        elif False:",
        ("tests/sandbox/test_disk_caps.py", "-k", "users_total"),
    ),
    Mutation(
        "a deleted session's workspace stays on disk",
        "services/api/sessions/router.py",
        "    workspace.drop_after_commit(",
        "    (lambda *_: None)(",
        ("tests/sandbox/test_disk_caps.py", "-k", "deleting"),
    ),
    Mutation(
        "the sweep keeps deleted sessions' workspaces",
        "services/sandbox/sweep.py",
        "            gone = sessions[sid] is not None",
        "            gone = False",
        ("tests/sandbox/test_disk_caps.py", "-k", "sweep"),
    ),
    Mutation(
        "a drop request removes a live session's workspace",
        "services/sandbox/sweep.py",
        "        if row is None or row.deleted_at is None:\n            return False",
        "        pass",
        ("tests/sandbox/test_disk_caps.py", "-k", "live_session"),
    ),
    Mutation(
        "the admin listing reports no workspace disk",
        "services/api/admin/router.py",
        'update={"disk_bytes": disk.get(u.id, 0)}',
        'update={"disk_bytes": 0}',
        ("tests/web/test_disk_usage_pages.py", "-k", "listing"),
    ),
    Mutation(
        "disk: the after-check trusts the user's total measured before the exec",
        "services/sandbox/service.py",
        "quota.enforce_after(workspace, sizes_before, now, outcome.killed_reason)",
        "quota.enforce_after(workspace, sizes_before, allowed, outcome.killed_reason)",
        ("tests/sandbox/test_disk_caps.py", "-k", "at_once"),
    ),
    Mutation(
        "budget: reservations read the budget rows without FOR UPDATE",
        "services/worker/budget/reservation.py",
        "         ORDER BY b.id\n           FOR UPDATE\n    ), ask AS (",
        "         ORDER BY b.id\n    ), ask AS (",
        ("tests/worker/budget/test_invariant.py", "-k", "user-only"),
    ),
    Mutation(
        "fence: a stale lease's step write is accepted",
        "services/worker/runtime/recorder.py",
        "         WHERE id = :job_id AND fence = :fence\n        RETURNING cancel_requested",
        "         WHERE id = :job_id\n        RETURNING cancel_requested",
        ("tests/worker/test_fence_refusals.py", "-k", "step"),
    ),
    Mutation(
        "fence: a workspace edit under a stale lease goes ahead",
        "services/worker/runtime/lease.py",
        "    if row is None or int(row.fence) != lease.fence:",
        "    if row is None:",
        ("tests/worker/test_fence_refusals.py", "-k", "edit"),
    ),
    Mutation(
        "redaction: spans reach the sinks uncleaned",
        "services/common/telemetry/redaction.py",
        "                cleaned.append(self.policy.clean_span(span))",
        "                cleaned.append(span)",
        ("tests/telemetry/test_sinks.py", "-k", "redacted"),
    ),
    Mutation(
        "sandbox: a project without network gets a network",
        "services/sandbox/backends/docker/containers.py",
        '            "network_mode": self.egress.network() if network else "none",',
        '            "network_mode": self.egress.network(),',
        ("tests/sandbox/test_abuse.py", "-k", "no_network_egress"),
    ),
    Mutation(
        "exactly-once edits: an edit applied before a crash is applied again",
        "services/worker/tools/files/editing.py",
        '    return sha256_file(target) == intent["sha256"]',
        "    return False",
        ("tests/worker/tools/test_editing.py", "-k", "ExactlyOnce"),
    ),
    Mutation(
        "sandbox egress: this host reachable from the sandbox network (no INPUT rule)",
        "services/sandbox/backends/docker/firewall.py",
        '            (self.iptables, "INPUT", ["-i", self.bridge, *REJECT_V4]),\n',
        "",
        ("tests/sandbox/test_egress.py", "-k", "outside_but"),
    ),
    Mutation(
        "sandbox egress: private ranges reachable (no DOCKER-USER jump)",
        "services/sandbox/backends/docker/firewall.py",
        '            (self.iptables, DOCKER_USER, ["-i", self.bridge, "-j", self.chain]),\n',
        "",
        ("tests/sandbox/test_egress.py", "-k", "outside_but"),
    ),
    Mutation(
        "simulator control API open under leaflab up's token",
        "services/model_sim/app.py",
        "    if config.control_token:\n        app.add_middleware(ControlGuard",
        "    if False:\n        app.add_middleware(ControlGuard",
        ("tests/model_sim/test_control_guard.py",),
    ),
    Mutation(
        "worker metrics bind every address by default",
        "services/common/telemetry/settings.py",
        '    metrics_bind: str = "127.0.0.1"',
        '    metrics_bind: str = "0.0.0.0"',
        ("tests/telemetry/test_metrics_serving.py", "-k", "loopback_only"),
    ),
    Mutation(
        "approvals: a command's changes to protected files are kept unheld",
        "services/worker/approvals/exec_hold.py",
        "    changes = stash.compare(after, max_bytes=int(settings.approval_hold_max_mb"
        " * 1024**2))",
        "    changes = []",
        ("tests/sandbox/test_protected_exec.py", "-k", "echo_into_makefile"),
    ),
    Mutation(
        "a timed-out tool attempt's parse child is left running",
        "services/worker/runtime/tool_attempts.py",
        "        attempt_ctx.cancel.set()\n",
        "",
        ("tests/worker/tools/web/test_pdf_fetch_bomb.py", "-k", "timeout"),
    ),
    Mutation(
        "a parser past its RSS mark stays in the pool",
        "services/library/parsing/pool.py",
        "            and self.rss_mb() < self.limits.recycle_rss_mb\n",
        "",
        ("tests/library/test_parser_pool.py", "-k", "memory_passes"),
    ),
    Mutation(
        "leaflab up stops the stores first (tier order reversed)",
        "services/cli/up/supervisor.py",
        "sorted({c.spec.tier for c in self.children}, reverse=True)",
        "sorted({c.spec.tier for c in self.children}, reverse=False)",
        ("tests/cli/test_stop_order.py",),
    ),
    Mutation(
        "the stack's children share the terminal's signals (no own session)",
        "services/cli/up/supervisor.py",
        "            start_new_session=True,",
        "            start_new_session=False,",
        ("tests/cli/test_stop_order.py",),
    ),
    Mutation(
        "a closed terminal's EIO cuts leaflab up's clean stop short",
        "services/cli/up/command.py",
        "    try:\n        click.echo(message)\n    except OSError:\n        pass",
        "    click.echo(message)",
        ("tests/cli/test_up_stop.py", "-k", "terminal"),
    ),
    Mutation(
        "SIGHUP re-executes a Celery worker (Celery's restart)",
        "services/common/celery_app.py",
        "    app = LeaflabCelery(",
        "    app = Celery(",
        ("tests/worker/test_stop_signals.py",),
    ),
    Mutation(
        "a model call failing while the worker stops parks the job (or fails it)",
        "services/worker/runtime/turn.py",
        "        if draining():  # stopping: hand the job back",
        "        if False:  # stopping: hand the job back",
        ("tests/worker/test_stop_signals.py", "-k", "model_call"),
    ),
    Mutation(
        "a stage's schema lets a grammar-following server answer an empty list",
        "services/worker/survey/schemas.py",
        '        array["minItems"] = 1',
        "        pass",
        ("tests/survey/test_stage_schemas.py",),
    ),
    Mutation(
        "library delete leaves the document's vectors in the store",
        "services/library/removal.py",
        "            runtime.store.delete_document(str(ident))\n",
        "            pass\n",
        ("tests/library/test_delete.py", "-k", "OwnerDeletes"),
    ),
    Mutation(
        "step numbers taken from the statement's snapshot",
        "services/worker/runtime/recorder.py",
        "        SELECT :step_id, :job_id, j.step_seq, :key,",
        "        SELECT :step_id, :job_id,\n"
        "               COALESCE((SELECT max(seq) FROM job_steps WHERE job_id = :job_id), 0) + 1,"
        " :key,",
        ("tests/worker/test_step_numbers.py", "-k", "distinct_numbers"),
    ),
    Mutation(
        "a model step records no start of its call",
        "services/worker/runtime/turn.py",
        "                started_at=called_at,\n",
        "",
        ("tests/worker/test_step_numbers.py", "-k", "how_long_the_call_took"),
    ),
    Mutation(
        "the lab library is read by its uploader only",
        "services/common/documents/collections.py",
        "    return [personal_collection(user_id), *projects, LAB_COLLECTION]",
        "    return [personal_collection(user_id), *projects]",
        ("tests/web/test_library_page.py", "-k", "read_by_every_member"),
    ),
    Mutation(
        "a budget-paused job keeps no record of what its call needs",
        "services/worker/budget/pause.py",
        '        "need_usd": None if overrun else held.usd,',
        '        "need_usd": None,',
        ("tests/web/test_admin_page.py", "-k", "raising_a_budget"),
    ),
    Mutation(
        "an invite link works more than once",
        "services/api/invites/service.py",
        "     WHERE token_hash = :hash AND used_at IS NULL AND expires_at > now()\n    RETURNING",
        "     WHERE token_hash = :hash AND expires_at > now()\n    RETURNING",
        ("tests/web/test_invites.py", "-k", "makes_a_working_key_once"),
    ),
    Mutation(
        "an expired invite link still makes a key",
        "services/api/invites/service.py",
        "     WHERE token_hash = :hash AND used_at IS NULL AND expires_at > now()\n    RETURNING",
        "     WHERE token_hash = :hash AND used_at IS NULL\n    RETURNING",
        ("tests/web/test_invites.py", "-k", "expired_or_unknown"),
    ),
    Mutation(
        "the bench CPU ledger reads single-threaded processes in 10 ms ticks",
        "bench/cpu_accounting.py",
        "    if threads == 1:\n",
        "    if False:\n",
        ("tests/bench/test_cpu_accounting.py",),
    ),
    Mutation(
        "docs: a page shows a leaflab command that does not exist",
        "docs/budgets.md",
        "Budgets are set with `leaflab admin budget set`",
        "Budgets are set with `leaflab admin budgets set`",
        ("tests/docs/test_docs_site.py", "-k", "shown_commands_exist"),
    ),
    Mutation(
        "a finish points at the user's next waiting job without handing it the slot",
        "services/worker/runtime/finish.py",
        "        UPDATE jobs SET enqueued_at = now()\n"
        "         WHERE id = (SELECT j.id FROM jobs j, done",
        "        UPDATE jobs SET enqueued_at = NULL\n"
        "         WHERE id = (SELECT j.id FROM jobs j, done",
        ("tests/worker/test_fairness.py", "-k", "freed_together"),
    ),
    Mutation(
        "a job refused by the lease's re-count stays marked as sent",
        "services/worker/runtime/lease.py",
        "        if row is None:\n            mark_waiting(tx, job_id=job_id)\n",
        "",
        ("tests/worker/test_fairness.py", "-k", "race"),
    ),
    Mutation(
        "webhook deliveries go out unsigned",
        "services/worker/notify/delivery.py",
        "        SIGNATURE_HEADER: signature(item.secret, body),",
        '        SIGNATURE_HEADER: "",',
        ("tests/api/test_webhooks.py", "-k", "signed_and_retried"),
    ),
    Mutation(
        "a webhook delivery the receiver refused is recorded as delivered",
        "services/worker/notify/delivery.py",
        "            if error is None:\n",
        "            if True:\n",
        ("tests/api/test_webhooks.py", "-k", "signed_and_retried"),
    ),
    Mutation(
        "the jobs' outbox notifies every user's webhooks",
        "migrations/versions/20261203_webhooks.py",
        "       AND ((w.project_id IS NULL AND w.user_id = NEW.user_id)",
        "       AND ((w.project_id IS NULL)",
        ("tests/api/test_webhooks.py", "-k", "signed_and_retried"),
    ),
    Mutation(
        "webhook deliveries bypass the outbound address guard",
        "services/worker/notify/delivery.py",
        "        transport=GuardedTransport(guard),\n",
        "",
        ("tests/api/test_webhooks.py", "-k", "never_answers"),
    ),
    Mutation(
        "tables flattened into text",
        "services/library/parsing/pdf_structure.py",
        "            per_page.append(with_tables(doc[index], blocks, budget)"
        " if tables else blocks)",
        "            per_page.append(blocks)",
        ("tests/library/test_tables.py", "-k", "tables_become_markdown"),
    ),
    Mutation(
        "line-end hyphens kept",
        "services/common/hyphenation.py",
        "        return left[:-1] + right\n",
        "        return left + right\n",
        ("tests/library/test_tables.py", "-k", "line_end_hyphens"),
    ),
    Mutation(
        "real compound hyphens dropped at a line end",
        "services/common/hyphenation.py",
        '    if "-" in word or "/" in word:\n',
        "    if False:\n",
        ("tests/library/test_tables.py", "-k", "line_end_hyphens"),
    ),
    Mutation(
        "a table longer than the window stays one chunk",
        "services/library/chunking.py",
        "    if len(lines) < 3 or estimate_tokens(text) <= max_tokens:",
        "    if True:",
        ("tests/library/test_tables.py", "-k", "split_by_rows"),
    ),
    Mutation(
        "the kind filter is ignored",
        "services/library/scope.py",
        "        return (kind or self.kind, wanted)",
        "        return (kind, wanted)",
        ("tests/library/test_tables.py", "-k", "kind_search_through_the_real_services"),
    ),
    Mutation(
        "search hits lose their table kind",
        "services/library/kinds.py",
        '    return str(payload_kind) if payload_kind in SPECIAL_KINDS else "text"',
        '    return "text"',
        ("tests/library/test_tables.py", "-k", "kind_search_through_the_real_services"),
    ),
    Mutation(
        "library fusion by document off: a paper ranks at its best chunk alone",
        "services/library/fusion.py",
        '    if config.unit == "document":\n',
        "    if False:\n",
        ("tests/library/test_retrieval_levers.py", "-k", "all_its_passages"),
    ),
    Mutation(
        "library score fusion by rank only: z-scores ignored",
        "services/library/fusion.py",
        '    if config.method == "rrf":\n        for scores, weight in scored:',
        "    if True:\n        for scores, weight in scored:",
        ("tests/library/test_retrieval_levers.py", "-k", "wide_score_margin"),
    ),
    Mutation(
        "library RM3 feedback never expands the BM25 query",
        "services/library/retrieval.py",
        "        expanded = expand(self.encoder, query, hits, self.fusion.prf)",
        "        expanded = None",
        ("tests/library/test_retrieval_levers.py", "-k", "rm3_feedback"),
    ),
    Mutation(
        "library BM25 title field: queries never match the title's own terms",
        "services/library/lexical.py",
        '            if p.title_mode == "field" and p.title_weight > 0:\n',
        "            if False:\n",
        ("tests/library/test_retrieval_levers.py", "-k", "title_field"),
    ),
    Mutation(
        "metadata ingest: a manual correction overwritten by extraction",
        "services/library/metadata/apply.py",
        "            continue  # a person's correction or the bibliography outranks extraction",
        "            pass",
        ("tests/library/test_metadata.py", "-k", "manual_correction_survives"),
    ),
    Mutation(
        "metadata ingest: PATCH ignores ownership",
        "services/api/library/edit.py",
        "    doc = removable_document(db, access, document_id)",
        "    from services.api.library.access import visible_document\n"
        "    doc = visible_document(db, access, document_id)",
        ("tests/library/test_metadata.py", "-k", "patch_corrects"),
    ),
    Mutation(
        "metadata ingest: duplicates not marked",
        "services/library/metadata/apply.py",
        'values["duplicate_of"] = find_original(db, doc, doi=doi, arxiv_id=arxiv)',
        'values["duplicate_of"] = None',
        ("tests/library/test_metadata.py", "-k", "same_doi"),
    ),
    Mutation(
        "metadata ingest: layout authors not read",
        "services/library/metadata/extract.py",
        "        authors = _layout_authors(page, first_page)",
        "        authors = []",
        ("tests/library/test_metadata.py", "-k", "shared_pdfs"),
    ),
    Mutation(
        "metadata: references.bib drops authors",
        "services/common/bibliography/writer.py",
        '"author": " and ".join(escape(a) for a in paper.get("authors") or []),',
        '"author": "",',
        ("tests/survey/test_reference_entries.py",),
    ),
    Mutation(
        "metadata: a reference line doubles the period after n.d.",
        "services/worker/survey/markdown.py",
        'return ". ".join(p.rstrip(".") for p in parts) + "."',
        'return ". ".join(parts) + "."',
        ("tests/survey/test_reference_entries.py",),
    ),
    Mutation(
        "metadata e2e: survey gather ignores the document's authors",
        "services/worker/survey/gather.py",
        '"authors": [str(a) for a in doc.authors or []],',
        '"authors": [],',
        ("tests/survey/test_pipeline.py", "-k", "references_carry"),
    ),
    Mutation(
        "claims: the checker's verdict is ignored (the model's verdict is final)",
        "services/worker/survey/verify.py",
        '            if not support["supported"]:',
        '            if verdict["verdict"] == "unsupported":',
        ("tests/survey/test_support.py", "-k", "keeps_only_what_the_checks_support"),
    ),
    Mutation(
        "claims: a claim with no content overlap passes",
        "services/common/claims/combine.py",
        '    if by_name["lexical"].value <= 0.0:\n'
        '        reasons.append("the claim shares no content word with its passage")\n'
        "    elif",
        "    if False:\n        pass\n    elif",
        ("tests/claims/test_checker.py", "-k", "embedding_calls_it_similar"),
    ),
    Mutation(
        "claims: an unrelated second citation beside a good one passes",
        "services/worker/survey/support.py",
        "            unrelated.append(key)",
        "            pass",
        ("tests/survey/test_support.py", "-k", "unrelated_second_citation"),
    ),
    Mutation(
        "claims: a number the passage does not state passes",
        "services/common/claims/combine.py",
        '    elif not by_name["numbers"].passed:',
        "    elif False:",
        ("tests/cli/test_check_claims.py", "-k", "wrong_number"),
    ),
    Mutation(
        "claims: a deleted document's citation passes",
        "services/worker/survey/citations.py",
        'why[key] = "its library document no longer exists" if gone else None',
        "why[key] = None",
        ("tests/survey/test_support.py", "-k", "deleted_documents_citation"),
    ),
    Mutation(
        "check-claims: malformed lines are reported but the run goes on",
        "services/cli/check_claims_cmd.py",
        "        sys.exit(2)",
        "        pass",
        ("tests/cli/test_check_claims.py", "-k", "nothing_is_checked"),
    ),
    Mutation(
        "claims route: a streamed body is not bounded",
        "services/library/routes/claims.py",
        "        if len(body) > MAX_BODY_BYTES:",
        "        if False:",
        ("tests/library/test_claims_route.py", "-k", "oversized"),
    ),
    Mutation(
        "webhooks: any user reads any webhook's deliveries",
        "services/api/webhooks/router.py",
        "    if hook is None or (not user.is_admin and hook not in _visible(db, user)):",
        "    if hook is None:",
        ("tests/api/test_authz_matrix.py", "-k", "another_users"),
    ),
    Mutation(
        "a search narrowed to documents returns other documents' passages",
        "services/library/scope.py",
        "        wanted = self.documents\n",
        "        wanted = None\n",
        ("tests/library/test_document_scoped_search.py",),
    ),
    Mutation(
        "the Edge store ignores the document filter",
        "services/library/store/edge.py",
        '            must.append(qe.FieldCondition(key="document_id", '
        "match=qe.MatchAny(any=documents)))",
        "            pass",
        ("tests/library/test_document_scoped_search.py",),
    ),
    Mutation(
        "the survey reads fetched papers from their first pages, never the library's passages",
        "services/worker/survey/gather.py",
        '    read_from_library(ctx, chosen, plan["search_queries"], wait_s)\n',
        "",
        ("tests/survey/test_open_access.py", "-k", "join_the_project_library"),
    ),
    Mutation(
        "schedules: a slot may hold a second job (no unique constraint)",
        "migrations/versions/20261204_schedules.py",
        '    op.create_unique_constraint("uq_jobs_schedule_slot", "jobs", '
        '["schedule_id", "schedule_slot"])',
        "    pass",
        ("tests/api/test_schedule_firing.py", "-k", "never_hold_a_second_job"),
    ),
    Mutation(
        "schedules: two firing loops claim the same slot (no row lock)",
        "services/api/schedules/firing.py",
        ".with_for_update(skip_locked=True)",
        "",
        ("tests/api/test_schedule_firing.py", "-k", "two_firing_loops_racing"),
    ),
    Mutation(
        "schedules: after downtime the earliest missed slot runs, not the latest",
        "services/api/schedules/firing.py",
        "    slot = max(cron.latest_at_or_before(now), schedule.next_slot)",
        "    slot = schedule.next_slot",
        ("tests/api/test_schedule_firing.py", "-k", "downtime"),
    ),
    Mutation(
        "schedules: a paused schedule fires",
        "services/api/schedules/firing.py",
        "    return (Schedule.paused.is_(False), Schedule.next_slot <= now)",
        "    return (Schedule.next_slot <= now,)",
        ("tests/api/test_schedule_firing.py", "-k", "paused"),
    ),
    Mutation(
        "schedules: an exhausted budget is not checked at a run",
        "services/api/schedules/firing.py",
        "    if left is not None and _exhausted(left.usd_remaining, left.tokens_remaining):",
        "    if False:",
        ("tests/api/test_schedule_firing.py", "-k", "refused_for_budget"),
    ),
    Mutation(
        "schedules: any user reads and removes any schedule",
        "services/api/schedules/router.py",
        "    if schedule is None or not may_read(",
        "    if schedule is None or False and not may_read(",
        ("tests/api/test_schedules.py", "-k", "nobody_else"),
    ),
    Mutation(
        "schedules: a survey's next run is not limited to what is new",
        "services/api/schedules/firing.py",
        '        body["input"]["since"] = schedule.last_run_at.isoformat()',
        "        pass",
        ("tests/api/test_schedule_firing.py", "-k", "added_since"),
    ),
    Mutation(
        "library import: an entry is not matched by title",
        "services/library/imports/catalog.py",
        "        return self.by_title.get(entry.norm_title())",
        "        return None",
        ("tests/library/test_imports.py", "-k", "matched_by_title"),
    ),
    Mutation(
        "library import: documents already there are not looked up (re-import duplicates)",
        "services/library/imports/settle.py",
        "    found = catalog.find(entry)\n    if found is not None:\n        return found\n",
        "    return None\n",
        ("tests/library/test_imports.py", "-k", "reimport_adds_nothing"),
    ),
    Mutation(
        "library import: ingestion overwrites the bibliography's metadata",
        "services/library/metadata/apply.py",
        'KEPT_SOURCES = (MANUAL, "import")',
        "KEPT_SOURCES = (MANUAL,)",
        ("tests/library/test_imports.py", "-k", "reimport_adds_nothing"),
    ),
    Mutation(
        "library import: anyone reads anyone's import",
        "services/api/library/import_jobs.py",
        "        or job.owner_id != access.user_id\n",
        "",
        ("tests/library/test_imports.py", "-k", "bad_files"),
    ),
    Mutation(
        "mcp: a scoped server's tool is callable from any project",
        "services/worker/tools/mcp/catalog.py",
        "        if not server.offered_to(project_id, project_name):\n            raise ToolError(",
        "        if False:\n            raise ToolError(",
        ("tests/worker/mcp/test_mcp_jobs.py", "-k", "scoped_server_is_refused"),
    ),
    Mutation(
        "mcp: a scoped server is offered to every project",
        "services/worker/tools/mcp/catalog.py",
        "            if not server.offered_to(project_id, project_name):\n                continue",
        "            if False:\n                continue",
        ("tests/worker/mcp/test_catalog.py", "-k", "project_scoping"),
    ),
    Mutation(
        "mcp: a server marked approval runs without one",
        "services/worker/approvals/gate.py",
        "        if tool.approval_required:\n            return True",
        "        if False:\n            return True",
        ("tests/worker/mcp/test_mcp_jobs.py", "-k", "marked_for_approval"),
    ),
    Mutation(
        "mcp: an interrupted external call is run again on resume",
        "services/worker/runtime/tool_exec.py",
        "        if tool.effect is ToolEffect.EXTERNAL:\n",
        "        if False:\n",
        ("tests/worker/mcp/test_mcp_jobs.py", "-k", "interrupted_external"),
    ),
    Mutation(
        "mcp: a hanging call is not bounded",
        "services/worker/tools/mcp/tool.py",
        "                self.spec.tool, arguments, timeout_s=self._call_timeout_s",
        "                self.spec.tool, arguments, timeout_s=30",
        ("tests/worker/mcp/test_catalog.py", "-k", "hanging_tool"),
    ),
    Mutation(
        "mcp: schemas of any size are offered",
        "services/worker/tools/mcp/discovery.py",
        "    if size > max_schema_bytes:",
        "    if False:",
        ("tests/worker/mcp/test_catalog.py", "-k", "hostile_schemas"),
    ),
    Mutation(
        "mcp: HTTP servers are reached without the address guard",
        "services/worker/tools/mcp/connection.py",
        "            check_server_url(self.config.url, self._guard)",
        "            pass",
        ("tests/worker/mcp/test_catalog.py", "-k", "address_guard"),
    ),
    Mutation(
        "mcp: stdio servers inherit the worker's environment",
        "services/worker/tools/mcp/connection.py",
        "                command=program, args=args, env=child_environment(home), cwd=str(home)",
        "                command=program, args=args, env=dict(os.environ), cwd=str(home)",
        ("tests/worker/mcp/test_catalog.py", "-k", "secrets"),
    ),
    Mutation(
        "notify: the outbox e-mails the owner whatever their settings say",
        "migrations/versions/20261206_email_notifications.py",
        "         WHERE u.id = NEW.user_id\n           AND coalesce(s.email, true)\n",
        "         WHERE u.id = NEW.user_id\n",
        ("tests/api/test_email_notifications.py", "-k", "settings_choose"),
    ),
    Mutation(
        "notify: the outbox trigger inserts no e-mail delivery",
        "migrations/versions/20261206_email_notifications.py",
        "      JOIN users active ON active.id = r.id AND NOT active.disabled;",
        "      JOIN users active ON active.id = r.id AND false;",
        ("tests/api/test_email_notifications.py", "-k", "succeeded_job_emails"),
    ),
    Mutation(
        "notify: the outbox trigger inserts no in-app notification",
        "migrations/versions/20261206_email_notifications.py",
        "     WHERE ev = ANY (coalesce(\n",
        "     WHERE false AND ev = ANY (coalesce(\n",
        ("tests/web/test_notifications_page.py", "-k", "badge"),
    ),
    Mutation(
        "notify: a job title's line breaks reach the Subject",
        "services/worker/notify/email_message.py",
        '    return flat if len(flat) <= limit else flat[: limit - 1] + "…"',
        "    return text",
        ("tests/api/test_email_notifications.py", "-k", "line_breaks"),
    ),
    Mutation(
        "notify: an e-mail the SMTP server never took is marked sent",
        "services/worker/notify/email_delivery.py",
        "            _record(factory, settings, item, failure)",
        "            _record(factory, settings, item, SendResult())",
        ("tests/api/test_email_notifications.py", "-k", "is_down"),
    ),
    Mutation(
        "notify: the Message-ID is not the delivery's",
        "services/worker/notify/email_message.py",
        '    return f"<leaflab-{delivery_id}@',
        '    return f"<leaflab-{uuid.uuid4()}@',
        ("tests/api/test_email_notifications.py", "-k", "succeeded_job_emails"),
    ),
    Mutation(
        "notify: a user lists anyone's notifications",
        "services/api/notifications/service.py",
        "        Notification.user_id == user.id,\n",
        "",
        ("tests/api/test_authz_matrix.py", "-k", "nobody_else"),
    ),
    Mutation(
        "notify: any project member changes the project's settings",
        "services/api/notifications/router.py",
        '    return project_role(db, user_id=user.id, project_id=project_id) == "owner"',
        "    return True",
        ("tests/api/test_authz_matrix.py", "-k", "nobody_else"),
    ),
    Mutation(
        "notify: the header's badge is never refreshed while the page is open",
        "services/api/web/static/notifications.js",
        "    setInterval(refresh, POLL_MS);",
        "",
        ("tests/web/test_notifications_page.py", "-k", "badge"),
    ),
    Mutation(
        "notify: without an SMTP host the dispatcher says nothing",
        "services/worker/notify/dispatcher.py",
        '            log.info("e-mail notifications are off: LEAFLAB_SMTP_HOST is not set")',
        "            pass",
        ("tests/api/test_email_notifications.py", "-k", "no_smtp_host"),
    ),
    Mutation(
        "lookup: an OpenAlex / Crossref answer overwrites a manual correction",
        "services/library/metadata/apply.py",
        "        if sources.get(field) in KEPT_SOURCES:\n"
        "            continue  # a person's correction or the bibliography outranks any service\n",
        "",
        ("tests/library/test_metadata_lookup.py", "-k", "manual_correction_outlives"),
    ),
    Mutation(
        "lookup: OpenAlex's is_retracted is ignored",
        "services/library/metadata/sources.py",
        "            retracted=work.is_retracted,",
        "            retracted=False,",
        ("tests/library/test_metadata_lookup.py", "-k", "retracted_paper and openalex"),
    ),
    Mutation(
        "lookup: a failed lookup (5xx, timeout, not JSON) fails the document's ingestion",
        "services/library/metadata/lookup.py",
        '                log.warning("library.lookup: document %s: %s", document, exc)\n'
        "                continue\n",
        "                raise\n",
        ("tests/library/test_metadata_lookup.py", "-k", "failed_lookup and status_500"),
    ),
    Mutation(
        "lookup: a title search's best hit is taken without an exact title match",
        "services/library/metadata/lookup.py",
        '    return bool(work.title) and normalise_title(work.title or "") == wanted',
        "    return bool(work.title)",
        ("tests/library/test_metadata_lookup.py", "-k", "title_matches_only_exactly"),
    ),
    Mutation(
        "survey: a citation of a retracted library document passes the citation check",
        "services/worker/survey/citations.py",
        "    return {by_doc[i] for i in rows}",
        "    return set()",
        ("tests/survey/test_retracted_citation.py",),
    ),
    Mutation(
        "library page: a retracted document shows no badge",
        "services/api/web/static/library.js",
        '    if (d.retracted) line.append(" ", el("span", { class: "badge badge-retracted"',
        '    if (false) line.append(" ", el("span", { class: "badge badge-retracted"',
        ("tests/web/test_library_page.py", "-k", "retracted_badge"),
    ),
    Mutation(
        "lookup: on although the address guard refuses the OpenAlex URL",
        "services/library/metadata/lookup.py",
        '        log.warning("library.lookup: off, the OpenAlex URL cannot be asked: %s", refused)\n'
        "        return None\n",
        '        log.warning("library.lookup: off, the OpenAlex URL cannot be asked: %s", refused)\n',
        ("tests/library/test_metadata_lookup.py", "-k", "on_only_when_the_guard"),
    ),
)


def control(mutations: tuple[Mutation, ...]) -> Mutation:
    """No edit, every mutation's tests in one run: they must pass in a copy of the
    tree, so a kill means the mutation broke them, not the copy or the machine (a
    missing data folder, a broken fixture)."""
    files: list[str] = []
    words: list[str] = []
    for mutation in mutations:
        file, rest = mutation.tests[0], mutation.tests[1:]
        if file not in files:
            files.append(file)
        # A module's name is a keyword of its tests: "module and (k)" keeps one
        # selection's -k to its own file; without -k a selection is its whole module.
        module = file.rsplit("/", 1)[-1].removesuffix(".py")
        words.append(f"{module} and ({rest[1]})" if rest[:1] == ("-k",) else module)
    expression = " or ".join(f"({word})" for word in words)
    return Mutation(
        "control: the selections pass unmutated", "", "", "", (*files, "-k", expression)
    )
