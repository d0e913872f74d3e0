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
        "        if not await asyncio.to_thread(_opens_as_pdf, staged):",
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
        "services/worker/approvals/policy.py",
        "    lowered = path.lower()\n    return any(lowered.endswith(s.lower()) for s in suffixes)",
        "    return any(path.endswith(s) for s in suffixes)",
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
)
