// Shared helpers for Leaflab's pages. No inline scripts anywhere (the CSP forbids them):
// pages load their own file and read data from data-* attributes.
"use strict";
const Leaflab = (() => {
  const csrf = () => /** @type {HTMLMetaElement | null} */ (document.querySelector('meta[name="csrf-token"]'))?.content || "";

  // Calls Leaflab's JSON API with the session cookie; writes carry the CSRF header.
  /** @param {string} method @param {string} path @param {unknown} [body] @returns {Promise<ApiJson>} */
  async function api(method, path, body) {
    /** @type {RequestInit & {headers: Record<string, string>}} */
    const init = { method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (method !== "GET" && method !== "HEAD") init.headers["X-CSRF-Token"] = csrf();
    if (body instanceof FormData) init.body = body;
    else if (body !== undefined) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    const resp = await fetch(path, init);
    // Assigning window.location navigates (it forwards to href); TypeScript types that setter
    // as string & Location, hence the cast (chat.js does the same).
    if (resp.status === 401) { /** @type {any} */ (window).location = "/login?next=" + encodeURIComponent(location.pathname); }
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = { raw: text }; }
    if (!resp.ok) {
      const message = data?.error?.message || resp.statusText;
      const err = /** @type {LeaflabApiError} */ (new Error(message)); err.status = resp.status; err.data = data; throw err;
    }
    return data;
  }

  // Builds DOM nodes with text content only: user data never becomes markup.
  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag @param {Record<string, any> | null} [attrs] "class", "text", on* listeners, attributes
   * @param {...unknown} children nodes or text (arrays are flattened; null and undefined skipped)
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  /** @param {unknown} x */
  const fmtUsd = (x) => "$" + (Number(x) || 0).toFixed(4);
  /** @param {number} ms */
  const fmtMs = (ms) => ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;

  // The nav's count of the viewer's jobs waiting for an approval, kept fresh while the
  // page is open (a turn that starts waiting shows up without a reload).
  async function refreshApprovalCount() {
    const badge = /** @type {HTMLElement | null} */ (document.querySelector('[data-testid="nav-approvals-count"]'));
    if (!badge) return;
    try {
      const waiting = (await api("GET", "/v1/jobs?status=waiting_approval&limit=100")).items.length;
      badge.textContent = waiting >= 100 ? "99+" : String(waiting);
      badge.hidden = waiting === 0;
      badge.setAttribute("aria-label", `${waiting} waiting`);
    } catch (_) { /* the count is a hint: a failed refresh keeps the last one */ }
  }
  document.addEventListener("DOMContentLoaded", () => {
    refreshApprovalCount();
    setInterval(refreshApprovalCount, 15000);
  });

  return { api, el, csrf, fmtUsd, fmtMs, refreshApprovalCount };
})();
