// The admin dashboard: spend charts, budgets edited inline, top jobs, queues/workers/breakers,
// users and keys, projects and members. Everything comes from /v1/admin/* with the session
// cookie; user data only ever enters the page as text (Leaflab.el), never as markup.
"use strict";
(() => {
  const { api, el, fmtUsd } = Leaflab;
  // The page's own elements (admin.html): there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const PALETTE = ["#1f6f43", "#2563eb", "#b45309", "#7c3aed", "#be123c", "#0f766e", "#4b5563"];
  const REFRESH_MS = 5000;
  /** @type {Record<string, any>} Chart.js charts by report */
  const charts = {};
  /** @type {ApiJson[]} */
  let budgets = [];
  /** @type {ApiJson[]} */
  let users = [];
  /** @type {ApiJson[]} */
  let projects = [];
  /** @type {Record<string, string>} */
  const savedNotes = {};  // budget id → the last save's outcome, kept across re-renders

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    const box = $("admin-error");
    box.textContent = err ? String(err.message || err) : "";
    box.hidden = !err;
  }

  // Runs an action from a button or form; its failure is shown, never swallowed.
  /** @param {(ev?: Event) => unknown} fn @returns {(ev?: Event) => Promise<void>} */
  const guarded = (fn) => async (ev) => {
    if (ev && ev.preventDefault) ev.preventDefault();
    try { showError(null); await fn(ev); } catch (err) { showError(err); }
  };

  /** @param {string | null | undefined} iso */
  const when = (iso) => iso ? new Date(iso).toLocaleString() : "—";
  const sinceParam = () => {
    const days = /** @type {HTMLSelectElement} */ ($("spend-since")).value;
    if (!days) return "";
    // days is the select's string: `*` takes its number (TypeScript wants a number there).
    return "&since=" + encodeURIComponent(new Date(Date.now() - /** @type {any} */ (days) * 86400000).toISOString());
  };

  // ---- spend charts ------------------------------------------------------------
  /** @param {string} by @param {ApiJson[]} items the spend report's rows */
  function drawChart(by, items) {
    const canvas = /** @type {HTMLCanvasElement} */ (document.querySelector(`canvas[data-testid=spend-chart][data-by=${by}]`));
    /** @type {string[]} */
    const labels = items.map((i) => i.key ?? "(none)");
    /** @type {{label: string, data: unknown[], backgroundColor: string, borderColor?: string}[]} */
    const datasets = [{ label: "spent US$", data: items.map((i) => i.cost_usd), backgroundColor: PALETTE[0], borderColor: PALETTE[0] }];
    if (by === "user") {
      // The budget limit next to what each user spent: editing a budget moves this bar.
      const limits = Object.fromEntries(budgets.filter((b) => b.scope === "user").map((b) => [b.user_email, b.usd_limit]));
      for (const email of Object.keys(limits)) if (!labels.includes(email)) labels.push(email);
      datasets.push({ label: "budget US$", data: labels.map((l) => limits[l] ?? null), backgroundColor: PALETTE[1] });
      datasets[0].data = labels.map((l) => items.find((i) => (i.key ?? "(none)") === l)?.cost_usd ?? 0);
    }
    canvas.dataset.labels = JSON.stringify(labels);
    canvas.dataset.values = JSON.stringify(datasets[0].data);
    if (charts[by]) {
      charts[by].data.labels = labels;
      charts[by].data.datasets = datasets;
      charts[by].update();
      return;
    }
    if (!window.Chart) return;  // the vendored script failed to load; the tables still show
    charts[by] = new Chart(canvas, {
      type: by === "day" ? "line" : "bar",
      data: { labels, datasets },
      options: { animation: false, maintainAspectRatio: false, scales: { y: { beginAtZero: true, ticks: { callback: (/** @type {number | string} */ v) => "$" + Number(v).toPrecision(2) } } },
                 plugins: { legend: { display: by === "user" } } },
    });
  }

  /** @param {string} by @param {ApiJson[]} items */
  function fillSpendTable(by, items) {
    const body = /** @type {HTMLElement} */ (document.querySelector(`table.spend-table[data-by=${by}] tbody`));
    body.replaceChildren(...items.map((i) => el("tr", {},
      el("td", { text: i.key ?? "(none)" }), el("td", { text: i.calls }),
      el("td", { text: (i.estimated_calls ? "≈" : "") + (i.input_tokens + i.output_tokens) }), el("td", { text: fmtUsd(i.cost_usd) }))));
  }

  async function loadSpend() {
    const reports = await Promise.all(["day", "user", "project", "model"].map(
      (by) => api("GET", `/v1/admin/spend?by=${by}${sinceParam()}`)));
    for (const report of reports) {
      const items = report.by === "day" ? [...report.items].sort((a, b) => a.key.localeCompare(b.key)) : report.items;
      drawChart(report.by, items);
      fillSpendTable(report.by, items);
    }
    $("spend-total").textContent = "Total " + fmtUsd(reports[0].total_usd);
  }

  // ---- budgets -------------------------------------------------------------------
  /** @param {ApiJson} b a budget from /v1/admin/budgets */
  function budgetForm(b) {
    const who = b.scope === "user" ? b.user_email : b.project;
    const id = "b-" + b.id;
    const form = el("form", { class: "budget-row", "data-testid": "budget-form", "data-scope": b.scope, "data-target": who },
      el("span", { class: "budget-who" }, el("span", { class: "badge", text: b.scope }), " ", el("strong", { text: who })),
      el("span", { class: "muted", text: `spent ${fmtUsd(b.spent_usd)} · left ${fmtUsd(b.usd_remaining)}` }),
      b.overrun_at ? el("span", { class: "badge", "data-testid": "budget-overrun", text: `overrun ${fmtUsd(b.overrun_usd)}: calls refused until saved` }) : null,
      pausedNote(b),
      el("label", { for: id + "-usd", class: "inline", text: "US$" }),
      el("input", { id: id + "-usd", name: "usd", type: "number", min: "0", step: "any", value: b.usd_limit, required: true }),
      el("label", { for: id + "-tok", class: "inline", text: "tokens" }),
      el("input", { id: id + "-tok", name: "tokens", type: "number", min: "0", step: "1", value: b.token_limit ?? "" }),
      el("label", { for: id + "-per", class: "inline", text: "period" }),
      el("select", { id: id + "-per", name: "period" },
        ...["monthly", "total"].map((p) => el("option", { value: p, selected: p === b.period, text: p }))),
      el("button", { type: "submit", text: "Save" }),
      el("span", { class: "saved muted", role: "status", text: savedNotes[b.id] || "" }));
    form.addEventListener("submit", guarded(async () => {
      const body = budgetBody(form, b.scope === "user" ? { user_id: b.user_id } : { project: b.project_id });
      const saved = await api("PUT", "/v1/admin/budgets", body);
      savedNotes[b.id] = saved.resumed_jobs.length
        ? `saved · ${saved.resumed_jobs.length} paused job(s) resumed` : "saved";
      /** @type {HTMLElement} */ (form.querySelector(".saved")).textContent = savedNotes[b.id];
      await refreshBudgetsAndSpend();
    }));
    return form;
  }

  // A limit that leaves less free than one call's worst case resumes nothing: say what
  // the paused jobs' next call needs, and what the limit must at least be.
  /** @param {ApiJson} b */
  function pausedNote(b) {
    if (!b.paused_jobs) return null;
    const jobs = `${b.paused_jobs} paused job(s)`;
    if (b.next_call_usd == null) return el("span", { class: "badge", "data-testid": "budget-need", text: jobs });
    const atLeast = b.spent_usd + b.reserved_usd + b.next_call_usd;
    return el("span", { class: "badge", "data-testid": "budget-need",
      text: `${jobs}: the next call needs up to ${fmtUsd(b.next_call_usd)} (set at least ${fmtUsd(atLeast)} to resume)` });
  }

  /** @param {HTMLFormElement} form @param {Record<string, unknown>} target */
  function budgetBody(form, target) {
    const data = new FormData(form);
    /** @type {Record<string, unknown>} */
    const body = { ...target, usd: Number(data.get("usd")), period: data.get("period") };
    if (data.get("tokens") !== "" && data.get("tokens") !== null) body.tokens = Number(data.get("tokens"));
    return body;
  }

  /** @param {{keepEdits?: boolean}} [options] */
  async function loadBudgets({ keepEdits = false } = {}) {
    budgets = (await api("GET", "/v1/admin/budgets")).items;
    const list = $("budget-list");
    // A timed refresh must not wipe a budget the admin is typing into.
    if (keepEdits && list.contains(document.activeElement)) return;
    list.replaceChildren(...(budgets.length ? budgets.map(budgetForm) : [el("p", { class: "muted", text: "No budgets set." })]));
  }

  async function refreshBudgetsAndSpend() { await loadBudgets(); await loadSpend(); }

  function fillBudgetTargets() {
    const scope = /** @type {HTMLSelectElement} */ ($("bn-scope")).value;
    const options = scope === "user"
      ? users.map((u) => el("option", { value: u.id, text: u.email }))
      : projects.map((p) => el("option", { value: p.id, text: p.name }));
    $("bn-target").replaceChildren(...options);
  }

  // ---- top jobs and operations ------------------------------------------------
  async function loadTopJobs() {
    /** @type {ApiJson[]} */
    const items = (await api("GET", "/v1/admin/top-jobs?limit=10" + sinceParam())).items;
    $("top-jobs").replaceChildren(...items.map((j) => el("tr", {},
      el("td", {}, el("a", { href: "/jobs/" + encodeURIComponent(j.job_id), text: j.job_id.slice(0, 8) })),
      el("td", { text: j.kind ?? "" }), el("td", { text: j.status ?? "" }), el("td", { text: j.user_email ?? "" }),
      el("td", { text: j.calls }), el("td", { text: fmtUsd(j.cost_usd) }))));
  }

  async function loadOps() {
    const ops = await api("GET", "/v1/admin/ops");
    $("queues").replaceChildren(...ops.queues.map((/** @type {ApiJson} */ q) => el("tr", { "data-queue": q.name },
      el("td", { text: q.name }), el("td", { text: q.waiting }))));
    $("unacked").textContent = `${ops.unacked} message(s) delivered, not yet acknowledged`;
    $("workers").replaceChildren(...(ops.workers.length ? ops.workers.map((/** @type {ApiJson} */ w) => el("tr", {},
      el("td", { text: w.name }), el("td", { text: w.queues.join(", ") }), el("td", { text: w.active })))
      : [el("tr", {}, el("td", { colspan: 3, class: "muted", text: "no worker answered" }))]));
    $("workers-error").textContent = ops.workers_error || "";
    $("breakers").replaceChildren(...(ops.breakers.length ? ops.breakers.map((/** @type {ApiJson} */ c) => el("tr", {},
      el("td", { text: c.endpoint }), el("td", { text: c.model }),
      el("td", {}, el("span", { class: "badge state-" + c.state, text: c.state })), el("td", { text: c.failures })))
      : [el("tr", {}, el("td", { colspan: 4, class: "muted", text: "all circuits closed" }))]));
  }

  // ---- users and keys ---------------------------------------------------------
  /** @param {string} email @param {string} key */
  function showNewKey(email, key) {
    // The key exists only in this box, until the page is left: the API never returns it again.
    const box = $("new-key-box");
    box.replaceChildren(
      el("p", {}, "New key for ", el("strong", { text: email }), ". Copy it now: it will not be shown again."),
      el("code", { "data-testid": "new-key-value", text: key }),
      el("button", { type: "button", "data-testid": "new-key-copy", text: "Copy", onclick: (/** @type {MouseEvent} */ ev) => copyKey(/** @type {HTMLButtonElement} */ (ev.target), box, key) }),
      el("button", { type: "button", class: "secondary", text: "Done", onclick: () => { box.replaceChildren(); box.hidden = true; } }));
    box.hidden = false;
  }

  // A one-time link with which the member makes their own first key: shown once, like a key.
  /** @param {ApiJson} user */
  async function inviteUser(user) {
    const invite = await api("POST", `/v1/admin/users/${user.id}/invites`, {});
    const box = $("new-key-box");
    box.replaceChildren(
      el("p", {}, "Invite link for ", el("strong", { text: user.email }),
        `. It works once, until ${new Date(invite.expires_at).toLocaleString()}; send it to them.`),
      el("code", { "data-testid": "invite-url", text: invite.url }),
      el("button", { type: "button", "data-testid": "new-key-copy", text: "Copy", onclick: (/** @type {MouseEvent} */ ev) => copyKey(/** @type {HTMLButtonElement} */ (ev.target), box, invite.url) }),
      el("button", { type: "button", class: "secondary", text: "Done", onclick: () => { box.replaceChildren(); box.hidden = true; } }));
    box.hidden = false;
  }

  /** @param {HTMLElement} button @param {HTMLElement} box @param {string} key */
  async function copyKey(button, box, key) {
    // The Clipboard API needs a secure context (https or localhost); a lab served over
    // plain http on its LAN address gets the selection fallback.
    try {
      await navigator.clipboard.writeText(key);
    } catch (_) {
      const range = document.createRange();
      range.selectNodeContents(/** @type {HTMLElement} */ (box.querySelector("code")));
      const selection = /** @type {Selection} */ (window.getSelection());
      selection.removeAllRanges();
      selection.addRange(range);
      if (!document.execCommand("copy")) { button.textContent = "Select and copy it by hand"; return; }
    }
    button.textContent = "Copied";
  }

  /** @param {ApiJson} user */
  async function openKeys(user) {
    const panel = $("keys-panel");
    /** @type {ApiJson[]} */
    const keys = (await api("GET", `/v1/admin/users/${user.id}/keys`)).items;
    const nameId = "kn-" + user.id;
    const form = el("form", { class: "row-form", "data-testid": "key-form" },
      el("label", { for: nameId, class: "inline", text: "Key name" }),
      el("input", { id: nameId, name: "name", type: "text", maxlength: "200" }),
      el("button", { type: "submit", text: "Create key" }));
    form.addEventListener("submit", guarded(async () => {
      const name = new FormData(form).get("name");
      const created = await api("POST", `/v1/admin/users/${user.id}/keys`, name ? { name } : {});
      showNewKey(user.email, created.key);
      await openKeys(user);
    }));
    panel.replaceChildren(
      el("h3", {}, "Keys of ", el("span", { text: user.email })),
      el("table", { "data-testid": "keys" }, el("thead", {}, el("tr", {}, ...["prefix", "name", "created", "last used", "state", ""].map((h) => el("th", { text: h })))),
        el("tbody", {}, ...keys.map((k) => el("tr", { "data-key-id": k.id },
          el("td", {}, el("code", { text: k.prefix + "…" })), el("td", { text: k.name ?? "" }),
          el("td", { text: when(k.created_at) }), el("td", { text: when(k.last_used_at) }),
          el("td", { text: k.revoked_at ? "revoked" : "active" }),
          el("td", {}, k.revoked_at ? "" : el("button", { type: "button", class: "danger", text: "Revoke",
            onclick: guarded(async () => {
              if (!window.confirm(`Revoke key ${k.prefix}…?`)) return;
              await api("DELETE", `/v1/admin/users/${user.id}/keys/${k.id}`);
              await openKeys(user);
            }) })))))),
      form);
    panel.hidden = false;
  }

  // Workspace disk in MB, one decimal (the CLI's listing spells it the same way).
  /** @param {number | null | undefined} n */
  const mb = (n) => `${((n || 0) / 1048576).toFixed(1)} MB`;

  async function loadUsers() {
    const listing = await api("GET", "/v1/admin/users");
    users = listing.items;
    $("users").replaceChildren(...users.map((u) => el("tr", { "data-user": u.email },
      el("td", { text: u.email }), el("td", { text: u.is_admin ? "yes" : "" }), el("td", { text: when(u.created_at) }),
      el("td", { "data-testid": "user-disk", text: `${mb(u.disk_bytes)} / ${mb(listing.user_disk_cap_bytes)}` }),
      el("td", {}, el("button", { type: "button", class: "secondary", text: "Keys", "aria-label": "Keys of " + u.email,
        onclick: guarded(() => openKeys(u)) }), " ",
        el("button", { type: "button", class: "secondary", text: "Invite", "aria-label": "Invite link for " + u.email,
          onclick: guarded(() => inviteUser(u)) })))));
    fillBudgetTargets();
  }

  // ---- projects and members ---------------------------------------------------
  /** @param {ApiJson} project */
  async function openMembers(project) {
    const panel = $("members-panel");
    /** @type {ApiJson[]} */
    const members = (await api("GET", `/v1/admin/projects/${project.id}/members`)).items;
    const emailId = "mn-" + project.id;
    const form = el("form", { class: "row-form", "data-testid": "member-form" },
      el("label", { for: emailId, class: "inline", text: "Email" }),
      el("input", { id: emailId, name: "email", type: "text", required: true, maxlength: "320" }),
      el("label", { for: emailId + "-role", class: "inline", text: "Role" }),
      el("select", { id: emailId + "-role", name: "role" }, el("option", { value: "member", text: "member" }), el("option", { value: "owner", text: "owner" })),
      el("button", { type: "submit", text: "Add member" }));
    form.addEventListener("submit", guarded(async () => {
      const data = new FormData(form);
      await api("POST", `/v1/admin/projects/${project.id}/members`, { email: data.get("email"), role: data.get("role") });
      await openMembers(project);
    }));
    panel.replaceChildren(
      el("h3", {}, "Members of ", el("span", { text: project.name })),
      el("table", {}, el("tbody", {}, ...members.map((m) => el("tr", {},
        el("td", { text: m.email }), el("td", { text: m.role }),
        el("td", {}, el("button", { type: "button", class: "danger", text: "Remove",
          onclick: guarded(async () => {
            await api("DELETE", `/v1/admin/projects/${project.id}/members/${m.user_id}`);
            await openMembers(project);
          }) })))))),
      form);
    panel.hidden = false;
  }

  async function loadProjects() {
    projects = (await api("GET", "/v1/admin/projects")).items;
    $("projects").replaceChildren(...projects.map((p) => el("tr", {},
      el("td", { text: p.name }), el("td", { text: p.allow_network ? "allowed" : "none" }), el("td", { text: when(p.created_at) }),
      el("td", {}, el("button", { type: "button", class: "secondary", text: "Members", "aria-label": "Members of " + p.name,
        onclick: guarded(() => openMembers(p)) })))));
    fillBudgetTargets();
  }

  // ---- wiring -----------------------------------------------------------------
  function wireForms() {
    $("bn-scope").addEventListener("change", fillBudgetTargets);
    $("budget-new").addEventListener("submit", guarded(async () => {
      const target = /** @type {HTMLSelectElement} */ ($("bn-scope")).value === "user" ? { user_id: /** @type {HTMLSelectElement} */ ($("bn-target")).value } : { project: /** @type {HTMLSelectElement} */ ($("bn-target")).value };
      await api("PUT", "/v1/admin/budgets", budgetBody(/** @type {HTMLFormElement} */ ($("budget-new")), target));
      await refreshBudgetsAndSpend();
    }));
    $("user-new").addEventListener("submit", guarded(async () => {
      await api("POST", "/v1/admin/users", { email: /** @type {HTMLInputElement} */ ($("un-email")).value.trim(), is_admin: /** @type {HTMLInputElement} */ ($("un-admin")).checked });
      /** @type {HTMLFormElement} */ ($("user-new")).reset();
      await loadUsers();
    }));
    $("project-new").addEventListener("submit", guarded(async () => {
      await api("POST", "/v1/admin/projects", { name: /** @type {HTMLInputElement} */ ($("pn-name")).value.trim(), allow_network: /** @type {HTMLInputElement} */ ($("pn-net")).checked });
      /** @type {HTMLFormElement} */ ($("project-new")).reset();
      await loadProjects();
    }));
    $("spend-since").addEventListener("change", guarded(() => Promise.all([loadSpend(), loadTopJobs()])));
  }

  /** @param {{keepEdits?: boolean}} [options] */
  async function refresh(options) {
    await loadBudgets(options);
    await Promise.all([loadSpend(), loadTopJobs(), loadOps()]);
  }

  document.addEventListener("DOMContentLoaded", guarded(async () => {
    wireForms();
    await Promise.all([loadUsers(), loadProjects()]);
    await refresh();
    document.body.dataset.adminReady = "1";
    // Spend, queues and breakers move while the page is open.
    setInterval(() => { if (!document.hidden) refresh({ keepEdits: true }).catch(showError); }, REFRESH_MS);
  }));
})();
