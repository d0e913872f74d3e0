// The chat page: sessions (new, rename, delete), the conversation, a live turn over SSE,
// token and cost bars and the per-turn chart. Data comes from the JSON API only.
"use strict";
(() => {
  // The page's own elements (chat.html): there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  /** @type {typeof Leaflab.el} */
  const el = (...a) => Leaflab.el(...a);
  const R = ChatRender;
  const app = $("chat-app");
  const contextLimit = Number(app.dataset.contextLimit) || 32000;
  let sessionId = app.dataset.sessionId || "";
  /** @type {ApiJson[]} */
  let sessions = [];
  /** @type {EventSource | null} */
  let source = null; // the EventSource of the turn being watched
  /** @type {(() => void) | null} */
  let unwatch = null; // clears what the watched turn put up (its "thinking…")
  /** @type {any} a Chart.js chart */
  let chart = null;
  /** @type {ApiJson} */
  let budget = null;

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    const box = $("chat-error");
    box.textContent = err ? String(err.message || err) : "";
    box.hidden = !err;
  }

  // ---- sessions ---------------------------------------------------------------------------
  async function loadSessions() {
    // Conversations only, unless asked: surveys, batch tasks and subagents open
    // sessions of their own, which would bury the chats.
    const kind = /** @type {HTMLInputElement} */ ($("show-all-sessions"))?.checked ? "all" : "chat";
    sessions = (await Leaflab.api("GET", `/v1/sessions?limit=200&kind=${kind}`)).items;
    const list = $("session-list");
    list.replaceChildren();
    for (const s of sessions) {
      const current = s.id === sessionId;
      list.append(el("li", { "data-testid": "session-item", "data-session-id": s.id },
        el("a", { href: `/?session=${encodeURIComponent(s.id)}`, "aria-current": current ? "page" : null, text: s.title || "Untitled" }),
        el("button", { type: "button", class: "secondary", "aria-label": `Rename ${s.title}`, "data-testid": "session-rename",
          text: "✎", onclick: () => startRename(s) }),
        el("button", { type: "button", class: "danger", "aria-label": `Delete ${s.title}`, "data-testid": "session-delete",
          text: "✕", onclick: () => removeSession(s) })));
    }
    let cur = sessions.find((s) => s.id === sessionId);
    // The open session may be one the chat list leaves out (a survey's): still titled.
    if (!cur && sessionId) cur = await Leaflab.api("GET", `/v1/sessions/${sessionId}`).catch(() => null);
    if (cur) { $("session-title").textContent = cur.title || "Untitled"; document.title = `${cur.title} · Leaflab`; }
  }

  /** @param {string} title @returns {Promise<string>} */
  async function newSession(title) {
    const s = await Leaflab.api("POST", "/v1/sessions", title ? { title } : {});
    return s.id;
  }

  /** @param {ApiJson} s a session */
  function startRename(s) {
    if (s.id !== sessionId) { /** @type {any} */ (window).location = `/?session=${encodeURIComponent(s.id)}&rename=1`; return; }
    const form = $("rename-form");
    form.hidden = false;
    /** @type {HTMLInputElement} */ ($("rename-input")).value = s.title || "";
    $("rename-input").focus();
  }

  /** @param {SubmitEvent} event */
  async function submitRename(event) {
    event.preventDefault();
    try {
      await Leaflab.api("PATCH", `/v1/sessions/${sessionId}`, { title: /** @type {HTMLInputElement} */ ($("rename-input")).value });
      $("rename-form").hidden = true;
      await loadSessions();
    } catch (err) { showError(err); }
  }

  /** @param {ApiJson} s */
  async function removeSession(s) {
    if (!window.confirm(`Delete the session "${s.title}"?`)) return;
    try {
      await Leaflab.api("DELETE", `/v1/sessions/${s.id}`);
      if (s.id === sessionId) { /** @type {any} */ (window).location = "/"; return; }
      await loadSessions();
    } catch (err) { showError(err); }
  }

  // ---- history ----------------------------------------------------------------------------
  /** @param {string} jobId @returns {Promise<ApiJson[]>} */
  async function stepsOf(jobId) {
    return (await Leaflab.api("GET", `/v1/jobs/${jobId}/steps`)).items;
  }

  /** @param {string} jobId @returns {Promise<ApiJson[]>} */
  async function artifactsOf(jobId) {
    return (await Leaflab.api("GET", `/v1/jobs/${jobId}/artifacts`)).items;
  }

  async function loadConversation() {
    const box = $("messages");
    box.replaceChildren();
    /** @type {ApiJson[]} */
    const msgs = (await Leaflab.api("GET", `/v1/sessions/${sessionId}/messages?limit=1000`)).items;
    /** @type {string[]} */
    const jobIds = [...new Set(msgs.map((m) => m.job_id).filter(Boolean))];
    /** @type {Record<string, ApiJson[]>} */
    const steps = {};
    await Promise.all(jobIds.map(async (j) => { steps[j] = await stepsOf(j); }));
    /** @type {Record<string, ApiJson>} */
    const byCall = {};
    for (const j of jobIds) for (const s of steps[j]) if (s.tool_call_id) byCall[s.tool_call_id] = s;
    /** @type {Record<string, HTMLElement>} */
    const cards = {};
    /** @type {Record<string, ApiJson[]>} */
    const llmSteps = {};
    for (const j of jobIds) llmSteps[j] = steps[j].filter((x) => x.kind === "llm" && x.status === "succeeded");
    /** @type {Record<string, number>} */
    const answered = {}; // assistant messages seen per job: the nth came from its nth llm step
    let lastJob = null;
    for (const m of msgs) {
      if (lastJob && m.job_id !== lastJob) await appendArtifacts(lastJob);
      lastJob = m.job_id;
      if (m.role === "user") {
        box.append(R.message("user", m.content));
        for (const s of (steps[m.job_id] || []).filter((x) => x.kind === "summary")) {
          const notice = R.compaction(m.job_id, "Conversation compacted");
          R.fillCompaction(notice, s);
          box.append(notice);
        }
      }
      else if (m.role === "assistant") {
        const calls = llmSteps[m.job_id] || [];
        const n = answered[m.job_id] = (answered[m.job_id] || 0) + 1;
        if (m.content) {
          const bubble = R.message("assistant", m.content, { "data-job-id": m.job_id });
          R.modelTag(bubble, R.stepModel(calls[n - 1] || calls[calls.length - 1]));
          box.append(bubble);
        }
        for (const call of m.tool_calls || []) {
          const p = R.callParts(call);
          const card = R.toolCard(p.id, p.name);
          card.dataset.jobId = m.job_id;
          const step = byCall[p.id];
          R.fillCard(card, { status: step ? step.status : "succeeded", args: p.args, step });
          cards[p.id] = card;
          box.append(card);
        }
      } else if (m.role === "tool" && cards[m.tool_call_id]) {
        R.fillCard(cards[m.tool_call_id], { result: m.content });
      }
    }
    if (lastJob) await appendArtifacts(lastJob);
    box.scrollTop = box.scrollHeight;
  }

  /** @param {string} jobId */
  async function appendArtifacts(jobId) {
    const items = await artifactsOf(jobId);
    if (items.length) $("messages").append(R.artifacts(items));
  }

  // ---- usage bars and chart ---------------------------------------------------------------
  /** @param {ApiJson} j a job */
  const tokensOf = (j) => j.usage.input_tokens + j.usage.output_tokens;

  /** @param {ApiJson[]} steps @returns {number | null} */
  function contextTokens(steps) {
    const llm = steps.filter((s) => s.kind === "llm");
    const last = llm[llm.length - 1];
    const r = last && last.result;
    const u = r && (r.usage || r);
    return u && Number(u.input_tokens) ? Number(u.input_tokens) : null;
  }

  // A meter needs a scale: with none (no budget set) only its text shows, never a bar
  // that is always full.
  /** @param {string} id a <meter> @param {number | null} value @param {string} text */
  function setMeter(id, value, text) {
    $(id).hidden = value === null;
    /** @type {HTMLMeterElement} */ ($(id)).value = Math.max(0, Math.min(1, value || 0));
    $(`${id}-text`).textContent = text;
  }

  async function refreshUsage() {
    // The budget as it stands now (an admin may have raised it since the last turn).
    budget = (await Leaflab.api("GET", `/v1/sessions/${sessionId}/budget`)).budget;
    /** @type {ApiJson[]} */
    const jobs = (await Leaflab.api("GET", `/v1/jobs?session=${sessionId}&kind=turn&limit=500`)).items.reverse();
    const total = jobs.reduce((a, j) => a + tokensOf(j), 0);
    const cost = jobs.reduce((a, j) => a + j.cost_usd, 0);
    const last = jobs[jobs.length - 1];
    if (last) {
      const used = contextTokens(await stepsOf(last.id));
      if (used !== null) setMeter("bar-context", used / contextLimit, `${used} / ${contextLimit} tokens`);
    }
    // Turn and session are shown against the budget (what was spent of what this
    // session could spend), when one is set.
    const limit = budget && budget.usd_remaining !== null ? cost + budget.usd_remaining : null;
    /** @param {number} usd */
    const against = (usd) => (limit ? usd / limit : null);
    const noBudget = limit === null ? " · no budget set" : "";
    if (last) {
      setMeter("bar-turn", against(last.cost_usd), `${tokensOf(last)} tokens · ${Leaflab.fmtUsd(last.cost_usd)}${noBudget}`);
    }
    setMeter("bar-session", against(cost), `${total} tokens · ${Leaflab.fmtUsd(cost)} in ${jobs.length} turns`
      + (limit !== null ? ` · ${Leaflab.fmtUsd(budget.usd_remaining)} budget left` : noBudget));
    drawChart(jobs);
    await refreshDisk();
  }

  // The workspace's size against its cap (and the user's total against theirs).
  async function refreshDisk() {
    const d = await Leaflab.api("GET", `/v1/sessions/${sessionId}/workspace`);
    /** @param {number} n */
    const mb = (n) => `${(n / 1048576).toFixed(1)} MB`;
    setMeter("bar-disk", d.cap_bytes ? d.bytes / d.cap_bytes : 0,
      `${mb(d.bytes)} / ${mb(d.cap_bytes)} · all your sessions ${mb(d.user_bytes)} / ${mb(d.user_cap_bytes)}`);
  }

  /** @param {ApiJson[]} jobs */
  function drawChart(jobs) {
    if (typeof Chart === "undefined") return;
    const labels = jobs.map((_, i) => `#${i + 1}`);
    const data = {
      labels,
      datasets: [
        { label: "input tokens", data: jobs.map((j) => j.usage.input_tokens), backgroundColor: "#1f6f43", yAxisID: "y" },
        { label: "output tokens", data: jobs.map((j) => j.usage.output_tokens), backgroundColor: "#8fbf9f", yAxisID: "y" },
        { label: "cost (USD)", data: jobs.map((j) => j.cost_usd), type: "line", borderColor: "#8a5a00", yAxisID: "cost" },
      ],
    };
    if (chart) { chart.data = data; chart.update(); return; }
    chart = new Chart($("turn-chart"), {
      type: "bar", data,
      options: { maintainAspectRatio: false, animation: false,
        scales: { y: { stacked: true, beginAtZero: true }, cost: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false } } } },
    });
  }

  // ---- a live turn ------------------------------------------------------------------------
  // A turn paused for its budget says so where the answer would appear, in words a member
  // can act on; the stream stays open, so a raise resumes the turn here and the notice goes.
  /** @param {HTMLElement} box @param {string} jobId @param {boolean} paused */
  function budgetNotice(box, jobId, paused) {
    const shown = box.querySelector(`[data-testid=budget-notice][data-job-id="${jobId}"]`);
    if (!paused) { if (shown) shown.remove(); return; }
    if (shown) return;
    box.append(Leaflab.el("div", { class: "notice budget-paused", role: "status", "data-testid": "budget-notice", "data-job-id": jobId },
      Leaflab.el("strong", { text: "Paused: your budget is used up." }),
      " An admin can raise it (Admin → Budgets); this turn then resumes here by itself."));
    box.scrollTop = box.scrollHeight;
  }

  /** @param {string} jobId */
  function watch(jobId) {
    if (source) source.close();
    if (unwatch) unwatch();
    const box = $("messages");
    /** @type {HTMLElement | null} */
    let bubble = null;
    /** @type {ReturnType<typeof R.streamed> | null} */
    let stream = null; // bubble's text as it streams (R.streamed)
    /** @type {string | null} */
    let lastModel = null;
    /** @type {Record<string, HTMLElement>} */
    const cards = {};
    // "thinking…" stands at the bottom while the model works and nothing streams yet.
    const placeholder = R.thinking();
    const idle = () => !bubble && !Object.values(cards).some((c) => c.dataset.status === "running");
    /** @param {boolean} shown */
    const waiting = (shown) => {
      if (shown && idle()) { box.append(placeholder); box.scrollTop = box.scrollHeight; } else placeholder.remove();
    };
    unwatch = () => placeholder.remove();
    const endStream = () => { if (stream) stream.flush(); stream = null; bubble = null; };
    $("turn-status").textContent = "working…";
    /** @type {HTMLButtonElement} */ ($("chat-send")).disabled = true;
    waiting(true);
    source = new EventSource(`/v1/jobs/${jobId}/events`);
    // A stream can end without "final" (events expired): stop reconnecting once the job is over.
    source.onerror = async () => {
      const job = await Leaflab.api("GET", `/v1/jobs/${jobId}`);
      if (source && LeaflabContracts.TERMINAL_STATUSES.includes(job.status)) {
        source.close(); source = null; /** @type {HTMLButtonElement} */ ($("chat-send")).disabled = false; $("turn-status").textContent = job.status;
        await openSession();
      }
    };
    // An event's data as the workers publish it, typed by the generated contract
    // (contracts.js: JobEventData), so a renamed event type or field fails the type check.
    /**
     * @template {keyof JobEventData} K
     * @param {K} type @param {(data: JobEventData[K]) => unknown} fn
     */
    const on = (type, fn) => /** @type {EventSource} */ (source).addEventListener(type, (e) => fn(JSON.parse(/** @type {MessageEvent} */ (e).data)));
    on("token", (d) => {
      if (!bubble) {
        waiting(false);
        bubble = R.message("assistant", "", { "data-streamed": "true", "data-job-id": jobId });
        stream = R.streamed(bubble, () => { box.scrollTop = box.scrollHeight; });
        box.append(bubble);
      }
      /** @type {ReturnType<typeof R.streamed>} */ (stream).add(d.text);
    });
    on("tool_start", (d) => {
      endStream();
      waiting(false);
      // The agent's tool events always carry the call's id and name (the contract
      // allows them absent for other emitters).
      const id = /** @type {string} */ (d.tool_call_id);
      const card = R.toolCard(id, /** @type {string} */ (d.name));
      card.dataset.jobId = jobId;
      cards[id] = card;
      box.append(card);
    });
    on("tool_end", async (d) => {
      const card = cards[/** @type {string} */ (d.tool_call_id)];
      if (!card) return;
      R.fillCard(card, { status: /** @type {string | undefined} */ (d.status), result: d.preview });
      waiting(true); // the model reads the results next
      await fillFromSteps(jobId, cards);
    });
    on("todo", (d) => R.todos($("todo-list"), d.items));
    on("model", (d) => { lastModel = d.model; R.modelTag(bubble, d.model); });
    on("model_retry", (d) => {
      // The failed attempt's text is not the answer: drop it; the retry streams anew.
      if (bubble) { bubble.remove(); bubble = null; stream = null; }
      box.append(R.retryMarker(d));
      waiting(true);
    });
    on("status", (d) => {
      const why = d.error || d.message;
      budgetNotice(box, jobId, d.status === "budget_exhausted");
      waiting(d.status === "running");
      $("turn-status").textContent = d.status === "waiting_model"
        ? `waiting for the model endpoint…${why ? ` (${why})` : ""}`
        : d.status === "budget_exhausted" ? "paused: budget used up"
          : d.status + (d.error ? `: ${d.error}` : "");
    });
    on("compression", (d) => {
      setMeter("bar-context", d.after_tokens / contextLimit, `${d.after_tokens} / ${contextLimit} tokens`);
      if (d.layer === "summary") box.append(R.compaction(jobId, `Conversation compacted: ${d.before_tokens} → ${d.after_tokens} tokens`));
    });
    on("events_lost", () => { /** @type {EventSource} */ (source).close(); openSession(); });
    on("final", async (d) => {
      budgetNotice(box, jobId, false);
      endStream();
      waiting(false);
      /** @type {EventSource} */ (source).close();
      source = null;
      /** @type {HTMLButtonElement} */ ($("chat-send")).disabled = false;
      $("turn-status").textContent = d.status;
      if (d.error) showError(d.error);
      const text = d.result && (d.result.content || d.result.text);
      if (!box.querySelector(`[data-role=assistant][data-job-id="${jobId}"]`) && text) {
        const answer = R.message("assistant", text, { "data-job-id": jobId });
        R.modelTag(answer, lastModel);
        box.append(answer);
      }
      await fillFromSteps(jobId, cards);
      await appendArtifacts(jobId);
      box.scrollTop = box.scrollHeight;
      await refreshUsage();
    });
  }

  /** @param {string} jobId @param {Record<string, HTMLElement>} cards */
  async function fillFromSteps(jobId, cards) {
    const notice = /** @type {HTMLElement | null} */ ($("messages").querySelector(`[data-testid=compaction][data-job-id="${jobId}"]`));
    for (const s of await stepsOf(jobId)) {
      const card = s.tool_call_id && cards[s.tool_call_id];
      if (card) R.fillCard(card, { status: s.status, args: s.arguments, result: R.stepResultText(s), step: s });
      if (notice && s.kind === "summary") R.fillCompaction(notice, s);
    }
  }

  /** @param {SubmitEvent} event */
  async function send(event) {
    event.preventDefault();
    showError(null);
    const input = /** @type {HTMLTextAreaElement} */ ($("chat-input"));
    const content = input.value;
    if (!content.trim()) return;
    try {
      if (!sessionId) {
        sessionId = await newSession(content.trim().slice(0, 60));
        history.replaceState(null, "", `/?session=${sessionId}`);
        await loadSessions();
        await commands.load(sessionId);
      }
      const accepted = await Leaflab.api("POST", `/v1/sessions/${sessionId}/messages`, { content });
      budget = accepted.budget;
      input.value = "";
      $("messages").append(R.message("user", content));
      watch(accepted.job_id);
    } catch (err) { showError(err); }
  }

  // ---- slash commands (static/chat_commands.js) ----------------------------------------------
  const commands = ChatCommands.attach(/** @type {HTMLTextAreaElement} */ ($("chat-input")), $("slash-list"));

  async function openSession() {
    if (!sessionId) return;
    const s = await Leaflab.api("GET", `/v1/sessions/${sessionId}`);
    R.todos($("todo-list"), s.todos);
    await loadConversation();
    await refreshUsage();
    const latest = (await Leaflab.api("GET", `/v1/jobs?session=${sessionId}&kind=turn&limit=1`)).items[0];
    if (latest && ["queued", "running", "waiting_approval", "waiting_model", "budget_exhausted"].includes(latest.status)) {
      // The stream replays the running turn from its start: drop what history drew of it.
      for (const node of $("messages").querySelectorAll(`[data-job-id="${latest.id}"]`)) node.remove();
      watch(latest.id);
    }
    if (new URLSearchParams(location.search).get("rename")) startRename(s);
  }

  $("chat-form").addEventListener("submit", send);
  $("chat-input").addEventListener("keydown", (e) => {
    if (commands.handleKey(e)) return;
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); /** @type {HTMLFormElement} */ ($("chat-form")).requestSubmit(); }
  });
  $("rename-form").addEventListener("submit", submitRename);
  $("show-all-sessions").addEventListener("change", () => loadSessions().catch(showError));
  $("new-session").addEventListener("click", async () => {
    try { /** @type {any} */ (window).location = `/?session=${await newSession("New session")}`; } catch (err) { showError(err); }
  });
  (async () => {
    try { await loadSessions(); await commands.load(sessionId); await openSession(); } catch (err) { showError(err); }
  })();
})();
