// The Jobs page's notification settings: the viewer's own (their jobs) or, with a
// project's name, that project's (members read them; its owners change them).
"use strict";
(() => {
  const form = document.getElementById("notify-settings-form");
  if (!form) return;
  const status = form.querySelector('[data-testid="notify-status"]');
  const recipients = form.querySelector(".notify-recipients");
  const project = () => form.elements.project.value.trim();
  const path = () => "/v1/notifications/settings" + (project() ? "?project=" + encodeURIComponent(project()) : "");

  function show(s) {
    form.elements.email.checked = s.email;
    for (const box of form.querySelectorAll('input[name="events"]')) box.checked = s.events.includes(box.value);
    recipients.hidden = s.scope !== "project";
    if (s.recipients) form.elements.recipients.value = s.recipients;
    form.querySelector('[data-testid="notify-save"]').disabled = !s.may_change;
    status.textContent = s.may_change ? "" : "Only a project owner can change these.";
  }

  async function load() {
    try { show(await Leaflab.api("GET", path())); }
    catch (err) { status.textContent = err.message; }
  }

  form.elements.project.addEventListener("change", load);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {
      email: form.elements.email.checked,
      events: [...form.querySelectorAll('input[name="events"]:checked')].map((b) => b.value),
    };
    if (project()) body.recipients = form.elements.recipients.value;
    try { show(await Leaflab.api("PUT", path(), body)); status.textContent = "Saved."; }
    catch (err) { status.textContent = err.message; }
  });
  load();
})();
