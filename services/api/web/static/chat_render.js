// DOM pieces of the chat page: messages, tool cards, artifacts, the todo list.
// Everything user- or model-made goes in as text (Leaflab.el), never as markup, except an
// assistant's answer: that is Markdown, rendered and sanitised by static/markdown.js.
// A user's message stays plain text: it is shown exactly as typed (pasted logs, code or
// "2*3*4" are not reformatted), and what the user wrote is what the page echoes.
"use strict";
const ChatRender = (() => {
  /** @type {typeof Leaflab.el} */
  const el = (...a) => Leaflab.el(...a);

  /** @param {unknown} value @returns {string} */
  function pretty(value) {
    if (value === undefined || value === null) return "";
    if (typeof value === "string") {
      try { return JSON.stringify(JSON.parse(value), null, 2); } catch (_) { return value; }
    }
    return JSON.stringify(value, null, 2);
  }

  // A tool call as the API stores it: OpenAI's {id, function: {name, arguments}} or flat.
  /** @param {ApiJson} call @returns {{id: string, name: string, args: unknown}} */
  function callParts(call) {
    const fn = call.function || call;
    return { id: call.id || "", name: fn.name || "?", args: fn.arguments };
  }

  /** @param {string} role @param {string | null | undefined} text @param {Record<string, unknown>} [extra] more attributes */
  function message(role, text, extra) {
    /** @type {Record<string, unknown>} */
    const attrs = { class: `msg ${role}`, "data-role": role, ...(extra || {}) };
    if (role === "assistant") attrs["data-testid"] = "message-assistant";
    if (role === "user") attrs["data-testid"] = "message-user";
    const body = role === "assistant"
      ? LeaflabMarkdown.renderInto(el("div", { class: "text" }), text || "")
      : el("span", { class: "text", text: text || "" });
    return el("div", attrs, el("span", { class: "role", text: role === "user" ? "You" : "Assistant" }), body);
  }

  // Shown while a turn waits for the model's first token (and again after each tool).
  function thinking() {
    return el("div", { class: "msg assistant thinking", "data-testid": "message-thinking", role: "status" },
      el("span", { class: "role", text: "Assistant" }), el("span", { class: "text muted", text: "thinking…" }));
  }

  // An answer as it streams: tokens accumulate and the Markdown is redrawn at most once
  // a frame (a burst of tokens costs one render); ``flush`` draws what came so far now.
  /** @param {HTMLElement} bubble @param {() => void} [drawn] called after each redraw */
  function streamed(bubble, drawn) {
    const body = /** @type {HTMLElement} */ (bubble.querySelector(".text"));
    let text = "";
    let frame = 0;
    const draw = () => { frame = 0; LeaflabMarkdown.renderInto(body, text); if (drawn) drawn(); };
    return {
      /** @param {string} piece */
      add(piece) { text += piece; if (!frame) frame = requestAnimationFrame(draw); },
      flush() { if (frame) cancelAnimationFrame(frame); draw(); },
    };
  }

  // Which model answered: a small line under the assistant's text.
  /** @param {HTMLElement | null | undefined} bubble @param {string | null | undefined} name */
  function modelTag(bubble, name) {
    if (!bubble || !name) return;
    let tag = /** @type {HTMLElement | null} */ (bubble.querySelector(".model"));
    if (!tag) { tag = el("span", { class: "model", "data-testid": "message-model" }); bubble.append(tag); }
    tag.textContent = `model: ${name}`;
    bubble.dataset.model = name;
  }

  // A model call that had streamed part of an answer is retried: its text is gone.
  /** @param {ApiJson} d a model_retry event's data */
  function retryMarker(d) {
    const why = d.error ? `: ${d.error}` : "";
    return el("div", { class: "notice model-retry", "data-testid": "model-retry", role: "status",
      text: `retrying model call (attempt ${d.attempt ?? "?"})${why}; the partial answer was dropped` });
  }

  // The model of an llm step, as recorded (the answer's own, else the routed one).
  /** @param {ApiJson} step @returns {string | null} */
  function stepModel(step) {
    return (step && step.result && step.result.model) || (step && step.name) || null;
  }

  /** @param {ApiJson} step @returns {number | null} */
  function durationOf(step) {
    if (!step || !step.finished_at) return null;
    return /** @type {any} */ (new Date(step.finished_at)) - /** @type {any} */ (new Date(step.started_at));
  }

  // A collapsible card: name, status and duration in the summary; arguments and result inside.
  /** @param {string} id @param {string} name */
  function toolCard(id, name) {
    const card = el("details", { class: "tool", "data-testid": "tool-card", "data-tool-call-id": id, "data-status": "running" },
      el("summary", {},
        el("span", { class: "tool-name", "data-testid": "tool-name", text: name }), " · ",
        el("span", { class: "tool-status", "data-testid": "tool-status", text: "running" }), " · ",
        el("span", { class: "tool-duration", "data-testid": "tool-duration", text: "…" })),
      el("div", { class: "label", text: "Arguments" }),
      el("pre", { class: "tool-args", "data-testid": "tool-args" }),
      el("div", { class: "label", text: "Result" }),
      el("pre", { class: "tool-result", "data-testid": "tool-result" }));
    return card;
  }

  /**
   * @param {HTMLElement} card a toolCard
   * @param {{status?: string, args?: unknown, result?: unknown, step?: ApiJson}} fill what is known so far
   */
  function fillCard(card, { status, args, result, step }) {
    if (status) { card.dataset.status = status; /** @type {HTMLElement} */ (card.querySelector(".tool-status")).textContent = status; }
    if (args !== undefined) /** @type {HTMLElement} */ (card.querySelector(".tool-args")).textContent = pretty(args);
    if (result !== undefined && result !== null) /** @type {HTMLElement} */ (card.querySelector(".tool-result")).textContent = pretty(result);
    const ms = durationOf(step);
    if (ms !== null) /** @type {HTMLElement} */ (card.querySelector(".tool-duration")).textContent = Leaflab.fmtMs(ms);
  }

  /** @param {ApiJson} step */
  function stepResultText(step) {
    const r = step && step.result;
    if (r && typeof r === "object" && "content" in r) return r.content;
    return r;
  }

  /** @param {ApiJson[]} items */
  function artifacts(items) {
    const box = el("div", { class: "artifacts", "data-testid": "artifacts" });
    for (const a of items) {
      if (/^image\/(png|jpeg|gif|webp)$/.test(a.mime)) {
        box.append(el("figure", {},
          el("img", { src: a.url, alt: a.display_name, "data-testid": "artifact-image", loading: "lazy" }),
          el("figcaption", {}, el("a", { href: a.url, download: a.display_name, text: a.display_name }))));
      } else {
        box.append(el("a", { href: a.url, download: a.display_name, "data-testid": "artifact-file",
          text: `${a.display_name} (${a.size} bytes)` }));
      }
    }
    return box;
  }

  /** @param {HTMLElement} list @param {ApiJson[] | null | undefined} items */
  function todos(list, items) {
    list.replaceChildren();
    if (!items || !items.length) { list.append(el("li", { class: "muted", text: "No todo list yet." })); return; }
    for (const t of items) {
      const mark = t.status === "completed" ? "✓ " : t.status === "in_progress" ? "▶ " : "○ ";
      list.append(el("li", { "data-status": t.status || "pending", "data-testid": "todo-item", text: mark + (t.content || "") }));
    }
  }

  // A /compact (or an automatic summary): the notice says what shrank; the summary itself
  // (the step's result) is folded inside once known.
  /** @param {string} jobId @param {string} text */
  function compaction(jobId, text) {
    return el("div", { class: "notice compaction", "data-testid": "compaction", "data-job-id": jobId },
      el("span", { class: "compaction-text", text }));
  }

  /** @param {HTMLElement} notice @param {ApiJson} step */
  function fillCompaction(notice, step) {
    const r = step.result || {};
    if (!r.content || notice.querySelector("details")) return;
    notice.append(el("details", {}, el("summary", { text: `Summary of ${r.covers ?? "?"} messages` }),
      el("pre", { "data-testid": "compaction-summary", text: r.content })));
  }

  return { message, thinking, streamed, modelTag, retryMarker, stepModel, toolCard, fillCard, callParts, stepResultText, artifacts, todos, pretty, compaction, fillCompaction };
})();
