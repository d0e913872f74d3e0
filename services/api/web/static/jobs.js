// The jobs list: filters map onto GET /v1/jobs query parameters (kept in the URL).
"use strict";
(() => {
  /** @type {typeof Leaflab.el} */
  const el = (...a) => Leaflab.el(...a);
  const form = /** @type {HTMLFormElement} */ (document.getElementById("job-filters"));
  /** @typedef {Record<string, HTMLInputElement | HTMLSelectElement | undefined>} Fields the filter form's controls by name */
  const fields = ["status", "kind", "all", "user", "project"];

  /** @param {ApiJson} job @returns {string} */
  function what(job) {
    const i = job.input || {};
    return i.content || i.topic || (i.tasks ? `${i.tasks.length} tasks` : "");
  }

  async function load() {
    const params = new URLSearchParams(location.search);
    for (const f of fields) { const input = /** @type {Fields} */ (/** @type {unknown} */ (form.elements))[f]; if (input) input.value = params.get(f) || ""; }
    const query = new URLSearchParams({ limit: "200" });
    for (const f of fields) if (params.get(f)) query.set(f, /** @type {string} */ (params.get(f)));
    const rows = /** @type {HTMLElement} */ (document.getElementById("job-rows"));
    const error = /** @type {HTMLElement} */ (document.getElementById("jobs-error"));
    try {
      /** @type {ApiJson[]} */
      const jobs = (await Leaflab.api("GET", `/v1/jobs?${query}`)).items;
      error.hidden = true;
      rows.replaceChildren(...jobs.map((j) => el("tr", { "data-testid": "job-row", "data-job-id": j.id, "data-status": j.status },
        el("td", {}, el("a", { href: `/jobs/${j.id}`, text: j.id.slice(0, 8) })),
        el("td", { text: j.kind }),
        el("td", {}, el("span", { class: `badge status-${j.status}`, text: j.status })),
        el("td", { text: new Date(j.created_at).toLocaleString() }),
        el("td", { text: (j.usage.estimated ? "≈" : "") + String(j.usage.input_tokens + j.usage.output_tokens) }),
        el("td", { text: Leaflab.fmtUsd(j.cost_usd) }),
        el("td", { class: "what", text: what(j).slice(0, 120) }))));
      if (!jobs.length) rows.append(el("tr", {}, el("td", { colspan: "7", class: "muted", text: "No jobs match." })));
    } catch (err) {
      error.textContent = /** @type {LeaflabApiError} */ (err).message; error.hidden = false; rows.replaceChildren();
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const params = new URLSearchParams();
    for (const f of fields) { const input = /** @type {Fields} */ (/** @type {unknown} */ (form.elements))[f]; if (input && input.value) params.set(f, input.value); }
    history.pushState(null, "", `/jobs?${params}`);
    load();
  });
  window.addEventListener("popstate", load);
  load();
})();
