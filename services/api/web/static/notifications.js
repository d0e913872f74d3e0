// The header's notifications: a badge with the unread count, refreshed every few seconds
// while the page is open, and a list (unread first) that marks everything read.
// Titles are model- or user-written: they only ever become text nodes (Leaflab.el).
"use strict";
(() => {
  const POLL_MS = 5000;
  /** @type {Record<string, string>} */
  const WORDS = { "job.succeeded": "succeeded", "job.failed": "failed",
    "job.waiting_approval": "waits for approval", "job.budget_exhausted": "paused: budget used up" };
  // The header's elements, there when the viewer is signed in (base.html).
  /** @param {string} id @returns {HTMLElement} */
  const q = (id) => /** @type {HTMLElement} */ (document.querySelector(`[data-testid="${id}"]`));

  /** @param {ApiJson} data /v1/notifications's answer */
  function render(data) {
    const badge = q("notifications-count");
    const list = q("notifications-list");
    const unread = data.unread;
    badge.textContent = unread >= 100 ? "99+" : String(unread);
    badge.hidden = unread === 0;
    badge.setAttribute("aria-label", `${unread} unread`);
    list.replaceChildren(...data.items.map((/** @type {ApiJson} */ n) => Leaflab.el("li",
      { class: n.unread ? "unread" : "", "data-testid": "notification", "data-job-id": n.job_id },
      Leaflab.el("a", { href: `/jobs/${encodeURIComponent(n.job_id)}`,
        text: `${n.kind} ${WORDS[n.event] || n.event}: ${n.title}` }),
      Leaflab.el("span", { class: "when",
        text: `${new Date(n.created_at).toLocaleString()} · ${Leaflab.fmtUsd(n.cost_usd)}` }))));
    q("notifications-empty").hidden = data.items.length > 0;
  }

  async function refresh() {
    try { render(await Leaflab.api("GET", "/v1/notifications?limit=20")); }
    catch (_) { /* a hint only: a failed refresh keeps the last count */ }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const toggle = q("notifications-toggle");
    const panel = q("notifications-panel");
    if (!toggle || !panel) return;
    toggle.addEventListener("click", () => {
      panel.hidden = !panel.hidden;
      toggle.setAttribute("aria-expanded", String(!panel.hidden));
      if (!panel.hidden) refresh();
    });
    q("notifications-read-all").addEventListener("click", async () => {
      try { await Leaflab.api("POST", "/v1/notifications/read", { all: true }); } catch (_) {}
      refresh();
    });
    refresh();
    setInterval(refresh, POLL_MS);
  });
})();
