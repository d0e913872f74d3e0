// The Schedules page: GET /v1/schedules (admins: ?all=true) as a table — cron, timezone,
// what runs, next slot, the last run linked to its job (GET …/runs?limit=1), paused or
// active — a form that POSTs a new schedule (a survey topic or a turn prompt), and
// remove / pause / resume on the viewer's own schedules (an admin's: on every one).
// Cron strings, prompts and errors come from users: they only ever become text nodes.
"use strict";
(() => {
  const { api, el } = Leaflab;
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const table = () => /** @type {HTMLElement} */ (document.querySelector("[data-testid=schedule-table]"));

  /** @param {string | null | undefined} iso */
  const utc = (iso) => iso ? new Date(iso).toISOString().replace("T", " ").slice(0, 16) + " UTC" : "";

  /** @param {ApiJson} s a schedule */
  function what(s) {
    const i = s.job.input || {};
    return `${s.job.kind}: ${i.topic || i.content || ""}`.slice(0, 160);
  }

  /** @param {string} message */
  function showError(message) {
    const box = $("schedules-error");
    box.textContent = message;
    box.hidden = !message;
  }

  /** @param {ApiJson} s */
  async function lastRun(s) {
    const cell = el("td", { "data-testid": "schedule-last" });
    if (!s.last_slot) { cell.textContent = "never"; return cell; }
    try {
      /** @type {ApiJson[]} */
      const runs = (await api("GET", `/v1/schedules/${encodeURIComponent(s.id)}/runs?limit=1`)).items;
      if (runs.length) {
        const job = runs[0];
        cell.append(el("a", { href: `/jobs/${encodeURIComponent(job.id)}`, "data-testid": "schedule-last-job",
          text: `${utc(job.created_at)} (${job.status})` }));
      } else {
        cell.textContent = utc(s.last_slot);
      }
    } catch {
      cell.textContent = utc(s.last_slot);
    }
    if (s.last_error) cell.append(el("p", { class: "error", "data-testid": "schedule-last-error", text: s.last_error }));
    return cell;
  }

  /** @param {string} label @param {string} testid @param {() => Promise<unknown>} run */
  function action(label, testid, run) {
    return el("button", { type: "button", class: "secondary", "data-testid": testid, text: label,
      onclick: async () => {
        try { await run(); showError(""); } catch (err) { showError(/** @type {LeaflabApiError} */ (err).message); }
        await load();
      } });
  }

  /** @param {ApiJson} s @param {boolean} mine */
  async function row(s, mine) {
    const id = encodeURIComponent(s.id);
    const actions = el("td", {});
    if (mine) {
      actions.append(s.paused
        ? action("Resume", "schedule-resume", () => api("POST", `/v1/schedules/${id}/resume`))
        : action("Pause", "schedule-pause", () => api("POST", `/v1/schedules/${id}/pause`)));
      actions.append(" ", action("Remove", "schedule-delete", () => api("DELETE", `/v1/schedules/${id}`)));
    }
    return el("tr", { "data-testid": "schedule-row", "data-schedule-id": s.id,
      "data-paused": s.paused ? "true" : "false" },
      el("td", { "data-testid": "schedule-cron", text: s.cron }),
      el("td", { text: s.timezone }),
      el("td", { class: "what", text: what(s) }),
      el("td", { "data-testid": "schedule-next", text: s.paused ? "paused" : utc(s.next_slot) }),
      await lastRun(s),
      el("td", {}, el("span", { class: `badge status-${s.paused ? "paused" : "running"}`,
        "data-testid": "schedule-state", text: s.paused ? "paused" : "active" })),
      actions);
  }

  async function load() {
    const admin = table().dataset.admin === "true";
    const viewer = table().dataset.viewer;
    const all = /** @type {HTMLInputElement | null} */ ($("schedules-all"))?.checked;  // admins only
    try {
      /** @type {ApiJson[]} */
      const items = (await api("GET", `/v1/schedules${all ? "?all=true" : ""}`)).items;
      const rows = await Promise.all(items.map((s) => row(s, admin || s.user_id === viewer)));
      $("schedule-rows").replaceChildren(...rows);
      /** @type {HTMLElement} */ (document.querySelector("[data-testid=schedules-empty]")).hidden = items.length > 0;
      document.body.dataset.schedulesReady = "1";
    } catch (err) {
      showError(/** @type {LeaflabApiError} */ (err).message);
    }
  }

  /**
   * @typedef {HTMLFormControlsCollection & {text: HTMLInputElement, kind: HTMLSelectElement, cron: HTMLInputElement,
   *   timezone: HTMLInputElement, project: HTMLInputElement}} ScheduleFields the schedule form's controls
   * @param {SubmitEvent} event
   */
  async function add(event) {
    event.preventDefault();
    const f = /** @type {ScheduleFields} */ (/** @type {HTMLFormElement} */ (event.target).elements);
    const text = f.text.value.trim();
    const job = f.kind.value === "turn"
      ? { kind: "turn", input: { content: text } }
      : { kind: "survey", input: { topic: text } };
    /** @type {{cron: string, timezone: string, job: object, project?: string}} */
    const body = { cron: f.cron.value.trim(), timezone: f.timezone.value.trim() || "UTC", job };
    if (f.project.value.trim()) body.project = f.project.value.trim();
    try {
      await api("POST", "/v1/schedules", body);
      showError("");
      f.text.value = "";
    } catch (err) {
      showError(/** @type {LeaflabApiError} */ (err).message);
    }
    await load();
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("schedule-form").addEventListener("submit", add);
    /** @type {HTMLElement | null} */ ($("schedules-all"))?.addEventListener("change", load);
    load();
  });
})();
