// The surveys page: the form, its cost estimate (asked again, debounced, whenever an input
// changes), the submit, and the list of the viewer's surveys. Topics are the user's text:
// they only ever become text nodes.
"use strict";
(() => {
  const { api, el, fmtUsd } = Leaflab;
  // The page's own elements: there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const DEBOUNCE_MS = 400;
  const LIST_REFRESH_MS = 5000;
  const MIN_TOPIC = 3;
  /** @type {ReturnType<typeof setTimeout> | null} */
  let debounce = null;
  let asked = 0;  // only the answer to the latest question is shown
  /** @type {ReturnType<typeof setTimeout> | null} */
  let listTimer = null;

  /** @param {string} text */
  function showError(text) {
    $("survey-error").textContent = text || "";
    $("survey-error").hidden = !text;
  }

  /** @returns {{topic: string, seed_papers: string[], length: string, formats: string[], years?: string}} */
  function surveyInput() {
    const seeds = /** @type {HTMLTextAreaElement} */ ($("seeds")).value.split("\n").map((s) => s.trim()).filter(Boolean);
    const from = /** @type {HTMLInputElement} */ ($("year-from")).value.trim();
    const to = /** @type {HTMLInputElement} */ ($("year-to")).value.trim();
    /** @type {ReturnType<typeof surveyInput>} */
    const input = {
      topic: /** @type {HTMLTextAreaElement} */ ($("topic")).value.trim(),
      seed_papers: seeds,
      length: /** @type {HTMLSelectElement} */ ($("length")).value,
      formats: /** @type {HTMLInputElement} */ ($("survey-form").querySelector("[data-testid=survey-format-tex]")).checked ? ["md", "tex"] : ["md"],
    };
    const years = from && to ? `${from}-${to}` : from || to;
    if (years) input.years = years;
    return input;
  }

  // ---- the estimate -------------------------------------------------------------------------
  /** @param {string} name @param {unknown} value @param {string} testid */
  function fact(name, value, testid) {
    return [el("dt", { text: name }), el("dd", { "data-testid": testid, text: String(value) })];
  }

  /** @param {ApiJson} e /v1/surveys/estimate's answer */
  function renderEstimate(e) {
    const box = $("survey-estimate");
    const tokens = e.input_tokens + e.output_tokens;
    box.dataset.state = e.within_budget ? "ok" : "over";
    const budget = e.budget_remaining_usd === null ? "no budget applies" : `${fmtUsd(e.budget_remaining_usd)} left`;
    const parts = [
      el("h3", { text: "Estimate" }),
      el("dl", { class: "estimate-facts" },
        ...fact("Papers to read", e.papers, "estimate-papers"),
        ...fact("Model calls", e.model_calls, "estimate-calls"),
        ...fact("Tokens", `${tokens.toLocaleString()} (${e.input_tokens.toLocaleString()} in · ${e.output_tokens.toLocaleString()} out)`, "estimate-tokens"),
        ...fact("Cost", fmtUsd(e.cost_usd), "estimate-cost"),
        ...fact("Budget", budget, "estimate-budget-left")),
      el("p", { class: e.within_budget ? "ok" : "error", "data-testid": "estimate-budget",
        text: e.within_budget ? "Within your budget." : "Over your remaining budget: the survey would pause when the budget runs out." }),
    ];
    if (!e.papers) parts.push(el("p", { class: "warn", text: "Your library has no ready papers: add PDFs on the Library page or give seed papers." }));
    box.replaceChildren(...parts);
  }

  async function estimate() {
    const box = $("survey-estimate");
    const input = surveyInput();
    const mine = ++asked;
    if (input.topic.length < MIN_TOPIC) {
      box.dataset.state = "empty";
      box.replaceChildren(el("p", { class: "muted", text: "Type a topic to see what the survey would cost." }));
      return;
    }
    box.dataset.state = "loading";
    box.setAttribute("aria-busy", "true");
    try {
      const answer = await api("POST", "/v1/surveys/estimate", input);
      if (mine === asked) renderEstimate(answer);
    } catch (err) {
      if (mine !== asked) return;
      box.dataset.state = "error";
      box.replaceChildren(el("p", { class: "error", "data-testid": "estimate-error", text: `No estimate: ${/** @type {LeaflabApiError} */ (err).message}` }));
    } finally {
      if (mine === asked) box.removeAttribute("aria-busy");
    }
  }

  function schedule() {
    clearTimeout(/** @type {ReturnType<typeof setTimeout> | undefined} */ (debounce));  // null: a no-op
    debounce = setTimeout(estimate, DEBOUNCE_MS);
  }

  // ---- submit -----------------------------------------------------------------------------
  /** @param {SubmitEvent} ev */
  async function submit(ev) {
    ev.preventDefault();
    const input = surveyInput();
    if (input.topic.length < MIN_TOPIC) {
      showError(`Give a topic of at least ${MIN_TOPIC} characters.`);
      $("topic").focus();
      return;
    }
    const button = /** @type {HTMLButtonElement} */ ($("survey-submit"));
    button.disabled = true;
    showError("");
    try {
      const job = await api("POST", "/v1/jobs", { kind: "survey", input });
      window.location.assign(`/surveys/${encodeURIComponent(job.id)}`);
    } catch (err) {
      showError(`Not started: ${/** @type {LeaflabApiError} */ (err).message}`);
      button.disabled = false;
    }
  }

  // ---- the list ---------------------------------------------------------------------------
  /** @param {ApiJson} j a survey job */
  function row(j) {
    return el("tr", { "data-testid": "survey-row", "data-job-id": j.id, "data-status": j.status },
      el("td", {}, el("a", { href: `/surveys/${j.id}`, text: j.input?.topic || "(no topic)" })),
      el("td", {}, el("span", { class: `badge status-${j.status}`, text: j.status })),
      el("td", { text: fmtUsd(j.cost_usd) }),
      el("td", { text: new Date(j.created_at).toLocaleString() }));
  }

  async function loadList() {
    clearTimeout(/** @type {ReturnType<typeof setTimeout> | undefined} */ (listTimer));
    try {
      /** @type {ApiJson[]} */
      const items = (await api("GET", "/v1/jobs?kind=survey&limit=50")).items;
      $("survey-rows").replaceChildren(...items.map(row));
      $("survey-list-status").textContent = items.length ? "" : "No surveys yet.";
    } catch (err) {
      $("survey-list-status").textContent = `Could not load your surveys: ${/** @type {LeaflabApiError} */ (err).message}`;
    }
    listTimer = setTimeout(loadList, LIST_REFRESH_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = $("survey-form");
    form.addEventListener("input", schedule);
    form.addEventListener("change", schedule);
    form.addEventListener("submit", submit);
    loadList().then(() => { document.body.dataset.surveysReady = "1"; });
    if (/** @type {HTMLTextAreaElement} */ ($("topic")).value.trim()) schedule();
  });
})();
