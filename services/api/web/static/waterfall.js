// The trace waterfall: one row per span, nested under its parent, its bar placed on a shared
// time axis; clicking (or Enter on) a row shows the span's attributes. Rows are buttons so the
// keyboard reaches them. Names and attributes are shown as text only.
"use strict";
/**
 * One span of a trace as /v1/jobs/{id}/trace lists it (the fields this page reads).
 * @typedef {{span_id: string, parent_span_id?: string | null, name: string, service: string, kind: string,
 *   status: string, status_message?: string | null, start: string, end: string, duration_ms: number,
 *   attributes?: Record<string, unknown>, events?: {name?: string, attributes?: object}[]}} TraceSpan
 */
const Waterfall = (() => {
  /** @type {typeof Leaflab.el} */
  const el = (...a) => Leaflab.el(...a);

  // Spans in tree order (parents before children, siblings by start), each with its depth.
  /** @param {TraceSpan[]} spans @returns {[TraceSpan, number][]} */
  function ordered(spans) {
    const byId = new Map(spans.map((s) => [s.span_id, s]));
    /** @type {Map<string, TraceSpan[]>} */
    const children = new Map();
    /** @type {TraceSpan[]} */
    const roots = [];
    for (const s of spans) {
      if (s.parent_span_id && byId.has(s.parent_span_id)) {
        if (!children.has(s.parent_span_id)) children.set(s.parent_span_id, []);
        /** @type {TraceSpan[]} */ (children.get(s.parent_span_id)).push(s);
      } else roots.push(s);
    }
    /** @param {TraceSpan} a @param {TraceSpan} b */
    const byStart = (a, b) => /** @type {any} */ (new Date(a.start)) - /** @type {any} */ (new Date(b.start));
    /** @type {[TraceSpan, number][]} */
    const out = [];
    const stack = roots.sort(byStart).reverse().map((s) => /** @type {[TraceSpan, number]} */ ([s, 0]));
    while (stack.length) {  // iterative: a deep trace must not overflow the call stack
      const [span, depth] = /** @type {[TraceSpan, number]} */ (stack.pop());
      out.push([span, depth]);
      const kids = (children.get(span.span_id) || []).sort(byStart);
      for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], depth + 1]);
    }
    return out;
  }

  /** @param {number} totalMs */
  function axis(totalMs) {
    return el("div", { class: "wf-row wf-axis", "aria-hidden": "true" },
      el("span", { class: "wf-label", text: "span" }),
      el("span", { class: "wf-track" }, ...[0, 0.25, 0.5, 0.75, 1].map((f) =>
        el("span", { class: "wf-tick", style: `left:${f * 100}%`, text: Leaflab.fmtMs(f * totalMs) }))),
      el("span", { class: "wf-dur", text: "duration" }));
  }

  /** @param {HTMLElement} box @param {TraceSpan} span @param {number} t0 */
  function detail(box, span, t0) {
    const rows = Object.entries(span.attributes || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) =>
      el("tr", { "data-testid": "span-attribute", "data-key": k }, el("th", { scope: "row", text: k }),
        el("td", {}, el("code", { text: typeof v === "string" ? v : JSON.stringify(v) }))));
    const events = (span.events || []).map((e) => el("li", { text: `${e.name || "event"} ${JSON.stringify(e.attributes || {})}` }));
    box.replaceChildren(
      el("h3", { "data-testid": "span-name", text: span.name }),
      el("p", { class: "muted", text: `${span.service} · ${span.kind} · ${span.status}${span.status_message ? `: ${span.status_message}` : ""}` }),
      el("p", { text: `starts at +${Leaflab.fmtMs(/** @type {any} */ (new Date(span.start)) - t0)}, takes ${Leaflab.fmtMs(span.duration_ms)}` }),
      el("table", { class: "attrs" }, el("tbody", {}, ...rows)),
      events.length ? el("details", {}, el("summary", { text: `${events.length} events` }), el("ul", {}, ...events)) : "");
  }

  /** @param {HTMLElement} box @param {HTMLElement} detailBox @param {TraceSpan[]} spans */
  function render(box, detailBox, spans) {
    box.replaceChildren();
    if (!spans.length) { box.append(el("p", { class: "muted", text: "No spans stored for this trace yet." })); return; }
    const t0 = Math.min(...spans.map((s) => +new Date(s.start)));
    const t1 = Math.max(...spans.map((s) => +new Date(s.end)));
    const total = Math.max(t1 - t0, 1);
    box.append(axis(total));
    /** @type {HTMLElement | null} */
    let selected = null;
    for (const [span, depth] of ordered(spans)) {
      const left = ((/** @type {any} */ (new Date(span.start)) - t0) / total) * 100;
      const width = Math.max((span.duration_ms / total) * 100, 0.3);
      const row = el("button", { type: "button", class: `wf-row wf-span status-${span.status}`,
        "data-testid": "span-row", "data-span-id": span.span_id, "aria-pressed": "false",
        onclick: () => {
          if (selected) selected.setAttribute("aria-pressed", "false");
          selected = row; row.setAttribute("aria-pressed", "true");
          detail(detailBox, span, t0);
        } },
        el("span", { class: "wf-label", style: `padding-left:${Math.min(depth, 20) * 12}px`, title: span.name, text: span.name }),
        el("span", { class: "wf-track" }, el("span", { class: `wf-bar svc-${(span.service || "").replace(/[^a-z]/g, "")}`, style: `left:${left}%;width:${Math.min(width, 100 - left)}%` })),
        el("span", { class: "wf-dur", text: Leaflab.fmtMs(span.duration_ms) }));
      // The list item wraps the button: a listitem role on the button itself would
      // not allow its aria-pressed state (axe: aria-allowed-attr).
      box.append(el("div", { role: "listitem" }, row));
    }
  }

  return { render, ordered };
})();
