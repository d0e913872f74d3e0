// One survey: its stages and figures live from the job's event stream (progress events carry
// stage, papers found/read, sections written, cost so far), then the finished report rendered
// from report.md with each [@key] linked to its library document (papers.json), the "Needs
// checking" list, and the artifacts to download.
"use strict";
(() => {
  const { api, el, fmtUsd } = Leaflab;
  // The page's own elements: there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const jobId = /** @type {string} */ ($("survey-app").dataset.jobId);  // survey.html always sets it
  const stageNodes = [.../** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("[data-testid=survey-stage]"))];
  const STAGES = stageNodes.map((n) => /** @type {string} */ (n.dataset.stage));
  const TERMINAL = LeaflabContracts.TERMINAL_STATUSES;
  /** @type {Record<string, string>} */
  const HALTED = { failed: "failed", cancelled: "cancelled", paused: "paused", budget_exhausted: "paused", waiting_approval: "paused", waiting_model: "paused" };
  /** @type {ApiJson} the job as /v1/jobs/{id} answers it */
  let job = null;
  // A progress event's data: hand-mirrored from services/common/contracts/events.py's Progress
  // (contracts.js carries the event types' names only, not their fields).
  /** @type {{stage?: string | null, papers_found?: number | null, papers_read?: number | null, sections_total?: number | null, sections_written?: number | null, cost_usd?: number | null}} */
  let progress = {};
  let ledgerStage = -1;  // the furthest stage the ledger shows work in (events may have expired)
  /** @type {EventSource | null} */
  let source = null;
  let reportLoaded = false;

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    $("survey-error").textContent = err ? String(err.message || err) : "";
    $("survey-error").hidden = !err;
  }

  // ---- stages and figures -------------------------------------------------------------------
  function currentStage() {
    if (job?.status === "succeeded" || progress.stage === "done") return STAGES.length;
    return Math.max(STAGES.indexOf(/** @type {string} */ (progress.stage)), ledgerStage);
  }

  function renderStages() {
    const cur = currentStage();
    const status = job ? job.status : "queued";
    for (const n of stageNodes) {
      const i = STAGES.indexOf(/** @type {string} */ (n.dataset.stage));
      const state = i < cur ? "done" : i > cur ? "pending" : HALTED[status] || "running";
      n.dataset.state = state;
      /** @type {HTMLElement} */ (n.querySelector(".stage-state")).textContent = state;
      if (state === "running") n.setAttribute("aria-current", "step"); else n.removeAttribute("aria-current");
    }
  }

  /** @param {string} id @param {string} label @param {number} done @param {number} total */
  function bar(id, label, done, total) {
    $(`${id}-label`).textContent = `${label}: ${done} / ${total}`;
    const p = /** @type {HTMLProgressElement} */ ($(`${id}-bar`));
    p.max = Math.max(total, 1);
    p.value = done;
  }

  function renderFigures() {
    bar("papers", "Papers read", progress.papers_read || 0, progress.papers_found || 0);
    bar("sections", "Sections written", progress.sections_written || 0, progress.sections_total || 0);
    const finished = job && TERMINAL.includes(job.status);
    const cost = finished || progress.cost_usd === undefined ? job?.cost_usd : progress.cost_usd;
    $("survey-cost").textContent = fmtUsd(cost || 0);
  }

  function render() {
    if (job) {
      $("survey-topic").textContent = job.input?.topic ? `Survey: ${job.input.topic}` : "Survey";
      $("survey-status").textContent = job.status;
      $("survey-status").className = `badge status-${job.status}`;
      $("survey-note").textContent = job.error || (job.status === "queued" && !progress.stage ? "Waiting for a worker…" : "");
    }
    renderStages();
    renderFigures();
  }

  async function loadJob() {
    job = await api("GET", `/v1/jobs/${jobId}`);
    if (job.kind !== "survey") throw new Error(`job ${jobId} is a ${job.kind} job, not a survey`);
    render();
    if (job.status === "succeeded" && !reportLoaded) await loadReport();
  }

  async function loadLedger() {
    /** @type {ApiJson[]} */
    const steps = (await api("GET", `/v1/jobs/${jobId}/steps`)).items;
    for (const s of steps) if (s.kind === "survey") ledgerStage = Math.max(ledgerStage, STAGES.indexOf(s.name));
    render();
  }

  // ---- the report ---------------------------------------------------------------------------
  /** @param {string} url @returns {Promise<string>} */
  async function artifactText(url) {
    const resp = await fetch(url, { credentials: "same-origin" });
    if (!resp.ok) throw new Error(`${url}: ${resp.status} ${resp.statusText}`);
    return resp.text();
  }

  /** @param {unknown} id */
  function openalexUrl(id) {
    return `https://openalex.org/${encodeURIComponent(String(id).replace(/^.*\//, ""))}`;
  }

  /** @param {string} key @param {ApiJson} paper its papers.json entry, if any */
  function citation(key, paper) {
    const label = `@${key}`;
    if (!paper) return el("span", { class: "citation unresolved", "data-testid": "survey-citation", "data-key": key, title: "not in papers.json", text: label });
    const page = (paper.locators || []).map((/** @type {ApiJson} */ l) => l.page).find(Boolean);
    const href = paper.document_id
      ? `/v1/library/documents/${encodeURIComponent(paper.document_id)}/pdf${page ? `#page=${page}` : ""}`
      : paper.openalex_id ? openalexUrl(paper.openalex_id) : null;
    const title = [paper.title, paper.year].filter(Boolean).join(", ");
    if (!href) return el("span", { class: "citation", "data-testid": "survey-citation", "data-key": key, title, text: label });
    return el("a", { class: "citation", href, target: "_blank", rel: "noopener", title, text: label,
      "data-testid": "survey-citation", "data-key": key, "data-document-id": paper.document_id || undefined });
  }

  // The report's "Needs checking" section gets a hook (and a warning colour).
  /** @param {ParentNode} root */
  function markNeedsChecking(root) {
    for (const h of root.querySelectorAll("h2, h3, h4")) {
      if (/** @type {string} */ (h.textContent).trim().toLowerCase() !== "needs checking") continue;
      h.classList.add("needs-checking");
      let next = h.nextElementSibling;
      while (next && !/^H\d$/.test(next.tagName)) {
        if (next.tagName === "UL") /** @type {HTMLElement} */ (next).dataset.testid = "survey-needs-checking";
        next = next.nextElementSibling;
      }
    }
  }

  async function loadReport() {
    reportLoaded = true;
    /** @type {ApiJson[]} */
    const items = (await api("GET", `/v1/jobs/${jobId}/artifacts`)).items;
    $("survey-artifacts").replaceChildren(...items.map((a) => el("li", {},
      el("a", { href: a.url, download: a.display_name, "data-testid": "survey-artifact", text: a.display_name }),
      el("span", { class: "muted", text: ` ${a.size.toLocaleString()} bytes` }))));
    const named = Object.fromEntries(items.map((a) => [a.name, a]));
    $("report-section").hidden = false;
    if (!named["report.md"]) {
      $("survey-report").replaceChildren(el("p", { class: "muted", text: "This survey has no report.md." }));
      return;
    }
    const [markdown, papers] = await Promise.all([
      artifactText(named["report.md"].url),
      named["papers.json"] ? artifactText(named["papers.json"].url).then(JSON.parse) : Promise.resolve([]),
    ]);
    /** @type {Map<string, ApiJson>} */
    const byKey = new Map(papers.map((/** @type {ApiJson} */ p) => [p.key, p]));
    const article = $("survey-report");
    LeaflabMarkdown.renderInto(article, markdown, { headingShift: 1, citation: (/** @type {string} */ key) => citation(key, byKey.get(key)) });
    markNeedsChecking(article);
    article.dataset.ready = "1";
  }

  // ---- the event stream ---------------------------------------------------------------------
  function closeStream() { if (source) { source.close(); source = null; } }

  async function settle() {
    await loadJob();
    if (TERMINAL.includes(job.status)) closeStream();
  }

  function watch() {
    source = new EventSource(`/v1/jobs/${jobId}/events`);
    // A finished job's stream may end without "final" (events expire): stop reconnecting then.
    source.onerror = () => { settle().catch(showError); };
    source.addEventListener("progress", (e) => { progress = JSON.parse(e.data); render(); });
    source.addEventListener("status", (e) => {
      /** @type {ApiJson} */
      const data = JSON.parse(e.data);
      if (data.progress) progress = data.progress;
      if (job && data.status) { job.status = data.status; render(); }
      if (TERMINAL.includes(data.status)) settle().catch(showError);
    });
    source.addEventListener("budget", () => { $("survey-note").textContent = "Paused: the budget is spent. It resumes after a raise."; });
    source.addEventListener("events_lost", () => { Promise.all([loadJob(), loadLedger()]).catch(showError); });
    source.addEventListener("final", () => { closeStream(); settle().catch(showError); });
  }

  (async () => {
    try {
      await loadJob();
      await loadLedger();
      // Finished surveys too: the stream replays their progress while Redis keeps it.
      if (!TERMINAL.includes(job.status)) watch();
    } catch (err) {
      showError(err);
    }
  })();
})();
