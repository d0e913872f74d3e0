// The Jobs page's notification settings: the viewer's own (their jobs) or, with a
// project's name, that project's (members read them; its owners change them).
"use strict";
(() => {
  /** @typedef {HTMLFormControlsCollection & {project: HTMLInputElement, email: HTMLInputElement, recipients: HTMLSelectElement}} NotifyFields */
  // Typed as present: a page without the form leaves at the guard, before anything else runs
  // (show and load are hoisted, which would otherwise lose the guard's narrowing).
  const form = /** @type {HTMLFormElement & {elements: NotifyFields}} */ (document.getElementById("notify-settings-form"));
  if (!form) return;
  const status = /** @type {HTMLElement} */ (form.querySelector('[data-testid="notify-status"]'));
  const recipients = /** @type {HTMLElement} */ (form.querySelector(".notify-recipients"));
  const project = () => form.elements.project.value.trim();
  const path = () => "/v1/notifications/settings" + (project() ? "?project=" + encodeURIComponent(project()) : "");

  /** @param {ApiJson} s the settings as the API answers them */
  function show(s) {
    form.elements.email.checked = s.email;
    for (const box of /** @type {NodeListOf<HTMLInputElement>} */ (form.querySelectorAll('input[name="events"]'))) box.checked = s.events.includes(box.value);
    recipients.hidden = s.scope !== "project";
    if (s.recipients) form.elements.recipients.value = s.recipients;
    /** @type {HTMLButtonElement} */ (form.querySelector('[data-testid="notify-save"]')).disabled = !s.may_change;
    status.textContent = s.may_change ? "" : "Only a project owner can change these.";
  }

  async function load() {
    try { show(await Leaflab.api("GET", path())); }
    catch (err) { status.textContent = /** @type {LeaflabApiError} */ (err).message; }
  }

  form.elements.project.addEventListener("change", load);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    /** @type {{email: boolean, events: string[], recipients?: string}} */
    const body = {
      email: form.elements.email.checked,
      events: [.../** @type {NodeListOf<HTMLInputElement>} */ (form.querySelectorAll('input[name="events"]:checked'))].map((b) => b.value),
    };
    if (project()) body.recipients = form.elements.recipients.value;
    try { show(await Leaflab.api("PUT", path(), body)); status.textContent = "Saved."; }
    catch (err) { status.textContent = /** @type {LeaflabApiError} */ (err).message; }
  });
  load();
})();
