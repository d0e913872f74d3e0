// The approvals page: every pending approval of the viewer's jobs, its per-file diffs as a
// unified diff view, and the three decisions (apply / request changes / reject).
// Paths, diffs and commands come from the model: they only ever become text nodes.
"use strict";
(() => {
  const { api, el } = Leaflab;
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const app = $("approvals-app");
  const onlyJob = app.dataset.job;
  const REFRESH_MS = 4000;   // new approvals appear without a reload
  const FOLLOW_MS = 1000;    // after a decision, until the job settles
  const FOLLOW_TRIES = 600;
  const MOVING = ["queued", "running"];
  /** @type {Record<string, string>} */
  const DONE_WORD = { apply: "Applied", request_changes: "Changes requested", reject: "Rejected" };
  /** @type {Map<string, HTMLElement>} */
  const shown = new Map();   // approval id -> its card, while pending
  /** @type {Set<string>} */
  const decided = new Set(); // decided here: never shown as pending again
  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    const box = $("approvals-error");
    box.textContent = err ? String(err.message || err) : "";
    box.hidden = !err;
  }

  // ---- the diff view ------------------------------------------------------------------
  /** @param {string} line */
  function lineClass(line) {
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("\\")) return "meta";
    if (line.startsWith("@@")) return "hunk";
    if (line.startsWith("+")) return "add";
    if (line.startsWith("-")) return "del";
    return "ctx";
  }

  /** @param {ApiJson} d one of an approval's diffs */
  function fileDiff(d) {
    const lines = String(d.diff || "").replace(/\n$/, "").split("\n").filter((l, i, all) => l || all.length > 1);
    /** @param {string} kind */
    const count = (kind) => lines.filter((l) => lineClass(l) === kind).length;
    return el("figure", { class: "diff", "data-testid": "approval-diff", "data-path": d.path },
      el("figcaption", {},
        el("code", { class: "diff-path", "data-testid": "approval-path", text: d.path }), " ",
        el("span", { class: "muted", text: `${d.tool} · +${count("add")} −${count("del")}` })),
      lines.length
        ? el("pre", { class: "diff-body" }, ...lines.map((l) => el("span", { class: `dl dl-${lineClass(l)}`, "data-kind": lineClass(l), text: l || " " })))
        : el("p", { class: "muted", text: "(no textual change)" }));
  }

  /** @param {ApiJson} d */
  function commandView(d) {
    return el("figure", { class: "diff", "data-testid": "approval-diff" },
      el("figcaption", {}, el("code", { class: "diff-path", text: d.tool }), " ", el("span", { class: "muted", text: "command" })),
      el("pre", { class: "diff-body command", text: String(d.command || "") }),
      ...(d.note ? [el("p", { class: "muted", text: String(d.note) })] : []),
      ...(d.output ? [el("pre", { class: "diff-body output", "data-testid": "approval-output", text: String(d.output) })] : []));
  }

  // ---- one approval ---------------------------------------------------------------------
  /** @param {ApiJson} job */
  function what(job) {
    const i = job.input || {};
    return String(i.content || i.topic || job.kind).slice(0, 160);
  }

  /** @param {HTMLElement} node @param {ApiJson} job @param {ApiJson} a the approval */
  function controls(node, job, a) {
    const fbId = `feedback-${a.id}`;
    /** @param {string} label @param {string} decision @param {string} cls @param {string} testid */
    const button = (label, decision, cls, testid) =>
      el("button", { type: "button", class: cls, "data-testid": testid, onclick: () => decide(node, job, a, decision) }, label);
    return el("div", { class: "approval-controls" },
      el("label", { for: fbId, text: "Feedback for the model (needed to request changes)" }),
      el("textarea", { id: fbId, rows: 3, maxlength: 20000, "data-testid": "approval-feedback", placeholder: "What should the model do instead?" }),
      el("div", { class: "buttons" },
        button("Apply", "apply", "", "approval-apply"),
        button("Request changes", "request_changes", "secondary", "approval-request-changes"),
        button("Reject", "reject", "danger", "approval-reject")));
  }

  /** @param {ApiJson} job @param {ApiJson} a */
  function card(job, a) {
    const node = el("article", { class: "card approval", "data-testid": "approval", "data-approval-id": a.id, "data-job-id": job.id, "data-status": a.status });
    const files = a.diffs.filter((/** @type {ApiJson} */ d) => d.path !== undefined).length;
    const asks = a.kind === "command" ? "wants to run a command"
      : a.kind === "exec_changes" ? `ran a command that changed ${files} protected file(s): keep the changes?`
      : `wants to change ${files} file(s)`;
    node.append(
      el("header", { class: "approval-head" },
        el("h2", {}, el("code", { text: a.tool_name }), " ", asks),
        el("p", { class: "muted" }, "Job ", el("a", { href: `/jobs/${job.id}`, text: job.id.slice(0, 8) }),
          ` · ${what(job)} · asked ${new Date(a.created_at).toLocaleString()}`)),
      ...a.diffs.map((/** @type {ApiJson} */ d) => (d.command !== undefined ? commandView(d) : fileDiff(d))),
      controls(node, job, a),
      el("p", { class: "outcome", "data-testid": "approval-outcome", role: "status" }));
    return node;
  }

  /** @param {HTMLElement} node @param {string} text @param {boolean} [isError] */
  function say(node, text, isError) {
    const out = /** @type {HTMLElement} */ (node.querySelector(".outcome"));
    out.textContent = text;
    out.classList.toggle("error", Boolean(isError));
  }

  /** @param {HTMLElement} node @param {ApiJson} job @param {ApiJson} a @param {string} decision */
  async function decide(node, job, a, decision) {
    const box = /** @type {HTMLTextAreaElement} */ (node.querySelector("textarea"));
    const feedback = box.value.trim();
    if (decision === "request_changes" && !feedback) {
      say(node, "Write the feedback the model should get, then request changes.", true);
      box.focus();
      return;
    }
    const buttons = /** @type {NodeListOf<HTMLButtonElement>} */ (node.querySelectorAll(".approval-controls button"));
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const body = decision === "request_changes" ? { decision, feedback } : { decision };
      const result = await api("POST", `/v1/jobs/${job.id}/approvals/${a.id}`, body);
      decided.add(a.id);
      shown.delete(a.id);
      node.dataset.status = result.status;
      /** @type {HTMLElement} */ (node.querySelector(".approval-controls")).remove();
      say(node, `${DONE_WORD[decision]}. The job continues…`);
      $("decided-section").hidden = false;
      $("approvals-decided").prepend(node);
      updateCount();
      follow(node, job.id, a.id, decision, FOLLOW_TRIES);
    } catch (err) {
      buttons.forEach((b) => { b.disabled = false; });
      say(node, `Not decided: ${/** @type {LeaflabApiError} */ (err).message}`, true);
      if (/** @type {LeaflabApiError} */ (err).status === 409) refresh();
    }
  }

  // Watches the job after a decision until it stops moving, then says how it went.
  /** @param {HTMLElement} node @param {string} jobId @param {string} approvalId @param {string} decision @param {number} tries */
  async function follow(node, jobId, approvalId, decision, tries) {
    try {
      const job = await api("GET", `/v1/jobs/${jobId}`);
      node.dataset.jobStatus = job.status;
      if (MOVING.includes(job.status) && tries > 0) {
        say(node, `${DONE_WORD[decision]}. The job is ${job.status}…`);
        setTimeout(() => follow(node, jobId, approvalId, decision, tries - 1), FOLLOW_MS);
        return;
      }
      const mine = (await api("GET", `/v1/jobs/${jobId}/approvals`)).items.find((/** @type {ApiJson} */ x) => x.id === approvalId);
      if (mine) node.dataset.status = mine.status;
      const why = mine?.error ? ` (${mine.error})` : "";
      say(node, `${DONE_WORD[decision]}: approval ${mine ? mine.status : "?"}${why}. Job ${job.status}.`, Boolean(mine?.error));
      if (job.status === "waiting_approval") refresh();
    } catch (err) {
      say(node, `Could not follow the job: ${/** @type {LeaflabApiError} */ (err).message}`, true);
    }
  }

  // ---- the list ---------------------------------------------------------------------------
  function updateCount() {
    $("approvals-status").textContent = shown.size
      ? `${shown.size} approval(s) waiting for you.`
      : "Nothing is waiting for your approval.";
  }

  /** @returns {Promise<ApiJson[]>} */
  async function waitingJobs() {
    if (onlyJob) return [await api("GET", `/v1/jobs/${encodeURIComponent(onlyJob)}`)];
    return (await api("GET", "/v1/jobs?status=waiting_approval&limit=100")).items;
  }

  async function refresh() {
    clearTimeout(/** @type {ReturnType<typeof setTimeout> | undefined} */ (timer));  // null: a no-op
    try {
      const jobs = (await waitingJobs()).filter((j) => j.status === "waiting_approval");
      const lists = await Promise.all(jobs.map(async (j) => /** @type {[ApiJson, ApiJson[]]} */ ([j, (await api("GET", `/v1/jobs/${j.id}/approvals`)).items])));
      /** @type {Set<string>} */
      const pending = new Set();
      for (const [job, items] of lists) {
        for (const a of items) {
          if (a.status !== "pending" || decided.has(a.id)) continue;
          pending.add(a.id);
          if (!shown.has(a.id)) {
            const node = card(job, a);
            shown.set(a.id, node);
            $("approvals-pending").append(node);
          }
        }
      }
      // Decided elsewhere (another tab, the CLI) or the job was cancelled: drop the card.
      for (const [id, node] of shown) if (!pending.has(id)) { node.remove(); shown.delete(id); }
      updateCount();
      showError(null);
    } catch (err) {
      showError(err);
    }
    timer = setTimeout(refresh, REFRESH_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    refresh().then(() => { document.body.dataset.approvalsReady = "1"; });
  });
})();
