// The job page: facts, live progress from the event stream, cancel, the job tree, the steps
// and the trace waterfall (with a Jaeger link when the deployment names one).
"use strict";
(() => {
  // The page's own elements (job.html): there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /** @type {typeof Leaflab.el} */
  const el = (...a) => Leaflab.el(...a);
  const app = $("job-app");
  const jobId = /** @type {string} */ (app.dataset.jobId);  // job.html always sets it
  const jaeger = app.dataset.jaegerUrl;
  const Fold = JobEventFold;
  /** @type {ApiJson} the job as /v1/jobs/{id} answers it */
  let job = null;
  /** @type {EventSource | null} */
  let source = null;
  let traceSpans = -1;

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    $("job-error").textContent = err ? String(err.message || err) : "";
    $("job-error").hidden = !err;
  }

  /** @param {string} name @param {unknown} value @param {string} testid @returns {HTMLElement[]} */
  function fact(name, value, testid) {
    return [el("dt", { text: name }), el("dd", { "data-testid": testid, text: value === null || value === undefined ? "—" : String(value) })];
  }

  // A turn's answer is the model's Markdown, rendered (and sanitised) whole; any other
  // result is data, shown as its JSON.
  /** @param {ApiJson} result @returns {HTMLElement[]} */
  function resultFact(result) {
    if (result && job.kind === "survey" && Array.isArray(result.artifacts)) return surveyResult(result);
    if (!result || typeof result.content !== "string" || !result.content) {
      return fact("Result", result ? JSON.stringify(result).slice(0, 2000) : null, "job-result");
    }
    const dd = el("dd", { class: "job-answer", "data-testid": "job-result" });
    return [el("dt", { class: "job-answer-label", text: "Result" }), LeaflabMarkdown.renderInto(dd, result.content)];
  }

  // A survey's result is its report and files: said in words, each file a link, not a
  // JSON blob of sizes and digests.
  /** @param {ApiJson} r */
  function surveyResult(r) {
    /** @param {number} n @param {string} one */
    const count = (n, one) => `${n} ${one}${n === 1 ? "" : "s"}`;
    const dd = el("dd", { "data-testid": "job-result", class: "survey-result" },
      el("p", { "data-testid": "survey-summary", text: `${count(r.papers_cited ?? 0, "paper")} cited of ${r.papers_found ?? 0} found · ${count(r.sections ?? 0, "section")} · ${r.needs_checking ?? 0} claim(s) need checking` }),
      el("p", {}, el("a", { href: `/surveys/${encodeURIComponent(jobId)}`, text: "Read the report" })),
      el("ul", { "data-testid": "survey-files" }, ...r.artifacts.map((/** @type {ApiJson} */ a) => el("li", {},
        el("a", { href: `/v1/jobs/${encodeURIComponent(jobId)}/artifacts/${encodeURIComponent(a.name)}`, text: a.name }),
        el("span", { class: "muted", text: ` · ${Math.max(1, Math.round((a.size || 0) / 1024))} KB` })))));
    return [el("dt", { text: "Result" }), dd];
  }

  // Where the job's own page elsewhere says more: its pending approval, its survey report.
  /** @param {string} status */
  function showLinks(status) {
    $("job-approval-link").hidden = status !== "waiting_approval";
    $("job-survey-link").hidden = job.kind !== "survey";
  }

  function renderJob() {
    $("job-kind").textContent = `${job.kind[0].toUpperCase()}${job.kind.slice(1)} job`;
    const status = $("job-status");
    status.textContent = job.status;
    status.className = `badge status-${job.status}`;
    $("job-cancel").hidden = Fold.isTerminal(job.status);
    showLinks(job.status);
    const i = job.input || {};
    const u = job.usage;
    $("job-facts").replaceChildren(
      ...fact("Input", i.content || i.topic || (i.tasks ? `${i.tasks.length} tasks` : JSON.stringify(i)), "job-input"),
      ...fact("Cost", Leaflab.fmtUsd(job.cost_usd), "job-cost"),
      ...fact("Tokens", `${u.estimated ? "≈ " : ""}${u.input_tokens} in · ${u.output_tokens} out · ${u.cached_tokens} cached${u.estimated ? " (estimated)" : ""}`, "job-tokens"),
      ...fact("Attempts", job.attempts, "job-attempts"),
      ...fact("Created", new Date(job.created_at).toLocaleString(), "job-created"),
      ...fact("Finished", job.finished_at ? new Date(job.finished_at).toLocaleString() : null, "job-finished"),
      ...fact("Error", job.error, "job-error-text"),
      ...resultFact(job.result));
    if (job.session_id) $("job-facts").append(el("dt", { text: "Session" }), el("dd", {}, el("a", { href: `/?session=${job.session_id}`, text: "open the chat" })));
  }

  async function loadJob() {
    job = await Leaflab.api("GET", `/v1/jobs/${jobId}`);
    renderJob();
  }

  // ---- progress ---------------------------------------------------------------------------
  /** @param {string} label @param {number} done @param {number} total @param {string} testid */
  function bar(label, done, total, testid) {
    const id = `p-${testid}`;
    return el("div", {}, el("label", { for: id, text: `${label}: ${done} / ${total}` }),
      el("progress", { id, "data-testid": testid, max: String(Math.max(total, 1)), value: String(done) }));
  }

  /** @param {ApiJson} p a progress event's data (or a batch's task counts) */
  function renderProgress(p) {
    const box = $("job-progress");
    /** @type {HTMLElement[]} */
    const parts = [];
    if (p.stage) parts.push(el("p", {}, "Stage: ", el("span", { class: "stage", "data-testid": "progress-stage", text: p.stage })));
    if (p.papers_found !== undefined) parts.push(bar("Papers read", p.papers_read || 0, p.papers_found || 0, "progress-papers"));
    if (p.sections_total !== undefined) parts.push(bar("Sections written", p.sections_written || 0, p.sections_total || 0, "progress-sections"));
    if (p.done !== undefined && p.total !== undefined) parts.push(bar("Tasks done", p.done, p.total, "progress-tasks"));
    if (p.cost_usd !== undefined) parts.push(el("p", { "data-testid": "progress-cost", text: `Cost so far: ${Leaflab.fmtUsd(p.cost_usd)}` }));
    if (parts.length) box.replaceChildren(...parts);
  }

  /** @param {string} type @param {ApiJson} data */
  function logEvent(type, data) {
    const text = type === "token" ? data.text : JSON.stringify(data);
    $("event-log").append(el("li", { "data-type": type, text: `${type} ${text.slice(0, 300)}` }));
  }

  function watch() {
    source = new EventSource(`/v1/jobs/${jobId}/events`);
    // The server ends the stream after "final"; a finished job's stream may end without one
    // (events expire): then stop the browser from reconnecting forever.
    source.onerror = async () => {
      await loadJob();
      if (source && Fold.isTerminal(job.status)) { source.close(); source = null; showDone(); }
    };
    let view = Fold.initial(job.status);
    for (const type of Fold.FOLLOWED) {
      source.addEventListener(type, async (e) => {
        // The contract (contracts.js) names the event types, not their fields: untyped JSON.
        /** @type {ApiJson} */
        const data = JSON.parse(/** @type {MessageEvent} */ (e).data);
        const before = view;
        view = Fold.fold(view, type, data);
        logEvent(type, data);
        if (view.progress && view.progress !== before.progress) renderProgress(view.progress);
        if (type === "status" || type === "tool_end") { $("job-status").textContent = data.status || $("job-status").textContent; await loadSteps(); }
        if (type === "status" && data.status) { job.status = view.status; $("job-cancel").hidden = view.terminal; showLinks(view.status); }
        if (type === "events_lost") await refreshAll();
        if (type === "final") { /** @type {EventSource} */ (source).close(); source = null; await refreshAll(); showDone(); pollTrace(10); }
      });
    }
  }

  // A job whose user lost access (removed from the project, account disabled) ends
  // cancelled with an "access_revoked: …" error: say so in words, not only the badge.
  const REVOKED = "access_revoked: ";
  function showDone() {
    const box = $("job-progress");
    const revoked = job.error && job.error.startsWith(REVOKED);
    if (revoked) {
      box.replaceChildren(el("p", { class: "error", "data-testid": "job-access-revoked", text: `Stopped: access revoked — ${job.error.slice(REVOKED.length)}.` }));
    } else if (box.querySelector(".muted")) box.replaceChildren(el("p", { text: `Finished: ${job.status}.` }));
  }

  // ---- tree, steps, trace -----------------------------------------------------------------
  async function loadTree() {
    const box = $("job-tree");
    /** @type {ApiJson[]} */
    const kids = (await Leaflab.api("GET", `/v1/jobs?parent=${jobId}&limit=500`)).items.reverse();
    /** @type {HTMLElement[]} */
    const parts = [];
    if (job.parent_job_id) parts.push(el("p", {}, "Part of ", el("a", { href: `/jobs/${job.parent_job_id}`, "data-testid": "job-parent", text: `job ${job.parent_job_id.slice(0, 8)}` })));
    if (kids.length) {
      parts.push(el("ul", { class: "tree" }, ...kids.map((k) => el("li", { "data-testid": "job-child", "data-job-id": k.id },
        el("a", { href: `/jobs/${k.id}`, text: `${k.kind} ${k.id.slice(0, 8)}` }), " ",
        el("span", { class: `badge status-${k.status}`, text: k.status }), " ",
        el("span", { class: "muted", text: (k.input.content || k.input.task || "").slice(0, 100) })))));
    }
    if (!parts.length) parts.push(el("p", { class: "muted", text: "No parent and no child jobs." }));
    box.replaceChildren(...parts);
  }

  async function loadSteps() {
    /** @type {ApiJson[]} */
    const steps = (await Leaflab.api("GET", `/v1/jobs/${jobId}/steps`)).items;
    $("step-rows").replaceChildren(...steps.map((s) => el("tr", { "data-testid": "step-row", "data-status": s.status },
      el("td", { text: String(s.seq) }), el("td", { text: s.kind }), el("td", { text: s.name }),
      el("td", { text: String(s.round) }), el("td", { text: s.status }),
      el("td", { text: s.finished_at ? Leaflab.fmtMs(/** @type {any} */ (new Date(s.finished_at)) - /** @type {any} */ (new Date(s.started_at))) : "…" }))));
  }

  async function loadTrace() {
    if (!job.trace_id) return 0;
    $("trace-id").textContent = job.trace_id;
    if (jaeger) { const a = /** @type {HTMLAnchorElement} */ ($("jaeger-link")); a.href = `${jaeger}/trace/${job.trace_id}`; a.hidden = false; }
    /** @type {ApiJson} */
    let trace;
    try { trace = await Leaflab.api("GET", `/v1/traces/${job.trace_id}`); } catch (err) { if (/** @type {LeaflabApiError} */ (err).status === 404) return 0; throw err; }
    if (trace.spans.length !== traceSpans) {
      traceSpans = trace.spans.length;
      Waterfall.render($("trace-waterfall"), $("span-detail"), trace.spans);
    }
    return trace.spans.length;
  }

  // Spans reach Postgres in batches after the job ends: look again a few times.
  /** @param {number} times */
  function pollTrace(times) {
    if (times <= 0) return;
    setTimeout(async () => { try { await loadTrace(); } catch (_) { /* next try */ } pollTrace(times - 1); }, 1500);
  }

  async function refreshAll() {
    await loadJob();
    await Promise.all([loadTree(), loadSteps(), loadTrace()]);
  }

  $("job-cancel").addEventListener("click", async () => {
    try {
      job = await Leaflab.api("POST", `/v1/jobs/${jobId}/cancel`);
      renderJob();
    } catch (err) { showError(err); }
  });

  (async () => {
    try {
      await refreshAll();
      // Finished jobs too: the stream replays their events (progress, log) while Redis keeps them.
      watch();
    } catch (err) { showError(err); }
  })();
})();
