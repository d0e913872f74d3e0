// The library page: upload PDFs (file input or drag and drop, several at once), follow each
// document's ingestion live over its event stream (SSE; polling only if a stream fails),
// search with a mode and a kind, open a hit's PDF at its page, delete a document (after a
// confirm). Filenames, titles and snippets are the uploader's data: they only ever become
// text nodes, except a table hit's Markdown, which goes through the sanitising renderer
// (markdown.js: markdown-it without HTML, then DOMPurify) that chat and surveys use.
"use strict";
(() => {
  const { api, el } = Leaflab;
  // The page's own elements (library.html): there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const FALLBACK_POLL_MS = 1500; // only while a document's stream has failed
  const LIST_REFRESH_MS = 10000; // someone else may upload into a shared project
  const PARALLEL_UPLOADS = 3;
  // A browser opens at most 6 connections to one host over HTTP/1.1: streams beyond
  // this wait their turn, so the page's own API calls never queue behind them.
  const MAX_STREAMS = 3;
  const DONE = new Set(["ready", "failed", "metadata_only"]);
  /** @typedef {DocumentEventData & Pick<JobEventData, "events_lost">} DocumentStreamData */
  /** @type {Map<string, ApiJson>} */
  const docs = new Map();    // id -> the document row, merged with its live progress
  /** @type {Map<string, EventSource>} */
  const streams = new Map(); // id -> the EventSource following it
  /** @type {Set<string>} */
  const polled = new Set();  // ids whose stream failed: followed by polling instead
  /** @type {ReturnType<typeof setTimeout> | null} */
  let listTimer = null;

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    const box = $("library-error");
    box.textContent = err ? String(err.message || err) : "";
    box.hidden = !err;
  }

  /** @param {string} documentId @param {number | string | null} [page] */
  const pdfLink = (documentId, page) =>
    `/v1/library/documents/${encodeURIComponent(documentId)}/pdf` + (page ? `#page=${page}` : "");

  // ---- uploads ----------------------------------------------------------------
  /** @param {File} file */
  async function uploadOne(file) {
    const item = el("li", { "data-testid": "upload-item" }, el("span", { text: file.name }), " — ",
      el("span", { class: "upload-state", text: "uploading…" }));
    $("uploads").prepend(item);
    const state = /** @type {HTMLElement} */ (item.querySelector(".upload-state"));
    const form = new FormData();
    form.append("file", file, file.name);
    // A project name typed in picks that project, whatever the menu says.
    const project = /** @type {HTMLInputElement} */ ($("lib-project")).value.trim();
    if (project) form.append("project", project);
    else if (/** @type {HTMLSelectElement} */ ($("lib-target")).value === "lab") form.append("collection", "lab");
    try {
      const accepted = await api("POST", "/v1/library/documents", form);
      state.textContent = accepted.duplicate ? "already in the library" : "queued for ingestion";
      item.dataset.documentId = accepted.id;
    } catch (err) {
      state.textContent = "refused: " + /** @type {LeaflabApiError} */ (err).message;
      state.classList.add("error");
    }
  }

  /** @param {File[]} files */
  async function uploadAll(files) {
    const queue = [...files];
    const lanes = Array.from({ length: Math.min(PARALLEL_UPLOADS, queue.length) }, async () => {
      while (queue.length) await uploadOne(/** @type {File} */ (queue.shift()));
    });
    await Promise.all(lanes);
    await loadDocuments();
  }

  function wireUploads() {
    const target = /** @type {HTMLSelectElement} */ ($("lib-target")), project = /** @type {HTMLInputElement} */ ($("lib-project"));
    project.addEventListener("input", () => { if (project.value.trim()) target.value = "project"; });
    target.addEventListener("change", () => { if (target.value !== "project") project.value = ""; });
    const input = /** @type {HTMLInputElement} */ ($("lib-files"));
    input.addEventListener("change", () => { const files = [.../** @type {FileList} */ (input.files)]; input.value = ""; uploadAll(files); });
    const zone = $("drop-zone");
    zone.addEventListener("dragover", (ev) => { ev.preventDefault(); zone.classList.add("over"); });
    zone.addEventListener("dragleave", () => zone.classList.remove("over"));
    zone.addEventListener("drop", (ev) => {
      ev.preventDefault();
      zone.classList.remove("over");
      const files = [...(ev.dataTransfer?.files || [])];
      if (files.length) uploadAll(files);
    });
  }

  // ---- documents and their ingestion ----------------------------------------------
  /** @param {ApiJson} d a document row */
  function progressCell(d) {
    const p = d.progress || {};
    const cell = el("td", { "data-testid": "doc-progress" });
    if (d.status === "failed") return cell;
    if (p.total) cell.append(el("progress", { max: p.total, value: p.done || 0, "aria-label": `chunks of ${d.title || d.filename || "document"}` }), " ");
    cell.append(el("span", { class: "progress-text", text: progressText(d) }));
    return cell;
  }

  /** @param {ApiJson} d */
  function progressText(d) {
    const p = d.progress || {};
    if (d.status === "ready" && p.seconds !== undefined) {
      return `${p.chunks} chunks from ${p.pages} pages (${p.embedded} embedded, ${p.reused} reused) in ${p.seconds} s`;
    }
    if (d.status === "ready") return "";
    if (p.total) return `${p.done || 0}/${p.total} chunks embedded`;
    if (p.pages !== undefined) return `parsed: ${p.pages} pages, ${p.chunks} chunks`;
    return polled.has(d.id) ? "waiting (polling)" : "waiting";
  }

  // Authors · year · venue · DOI under the title; every value is text (uploader's data).
  /** @param {ApiJson} d */
  function metaLine(d) {
    const line = el("div", { class: "doc-meta", "data-testid": "doc-meta" });
    /** @type {string[]} */
    const authors = d.authors || [];
    if (authors.length) {
      const shown = authors.slice(0, 4).join(", ") + (authors.length > 4 ? " et al." : "");
      line.append(el("span", { "data-testid": "doc-authors", text: shown }));
    }
    if (d.year) line.append(" · ", el("span", { "data-testid": "doc-year", text: String(d.year) }));
    if (d.venue) line.append(" · ", el("span", { "data-testid": "doc-venue", text: d.venue }));
    if (d.doi) {
      line.append(" · ", el("a", { "data-testid": "doc-doi", href: "https://doi.org/" + encodeURI(d.doi),
        target: "_blank", rel: "noopener", text: "doi:" + d.doi }));
    } else if (d.arxiv_id) {
      line.append(" · ", el("a", { "data-testid": "doc-arxiv", href: "https://arxiv.org/abs/" + encodeURI(d.arxiv_id),
        target: "_blank", rel: "noopener", text: "arXiv:" + d.arxiv_id }));
    }
    if (d.duplicate_of) line.append(" ", el("span", { class: "badge", "data-testid": "doc-duplicate", text: "duplicate" }));
    // A lookup (OpenAlex / Crossref) said so: citing it fails the survey's check.
    if (d.retracted) line.append(" ", el("span", { class: "badge badge-retracted", "data-testid": "doc-retracted", text: "Retracted" }));
    return line;
  }

  /** @param {ApiJson} d */
  function row(d) {
    return el("tr", { "data-document-id": d.id, "data-status": d.status },
      el("td", {}, el("div", { text: d.title || "(untitled)" }), metaLine(d)),
      el("td", { text: d.filename || d.source_url || "" }),
      el("td", { "data-testid": "doc-collection", text: d.collection_name || d.collection }),
      el("td", {}, el("span", { class: "badge status-" + d.status, text: d.status }),
        d.error ? el("span", { class: "error", text: " " + d.error }) : null),
      el("td", { "data-testid": "doc-pages", text: d.pages ?? "" }), el("td", { "data-testid": "doc-chunks", text: d.chunks ?? "" }),
      progressCell(d),
      el("td", {}, d.status === "ready" ? el("a", { href: pdfLink(d.id), target: "_blank", rel: "noopener", text: "PDF" }) : ""),
      el("td", {}, deleteButton(d)));
  }

  // The API refuses to delete a document while it is ingested (409): the button waits too.
  /** @param {ApiJson} d */
  function deleteButton(d) {
    const name = d.title || d.filename || "this document";
    const button = el("button", { type: "button", class: "secondary", "data-testid": "doc-delete",
      "aria-label": `Delete ${name}`, text: "Delete", disabled: !DONE.has(d.status),
      title: DONE.has(d.status) ? undefined : "wait until ingestion ends" });
    button.addEventListener("click", () => removeDocument(d, name));
    return button;
  }

  /** @param {ApiJson} d @param {string} name */
  async function removeDocument(d, name) {
    if (!window.confirm(`Delete "${name}" from the library? Its passages will no longer appear in search.`)) return;
    try {
      await api("DELETE", `/v1/library/documents/${encodeURIComponent(d.id)}`);
      docs.delete(d.id);
      render();
      // Hits already on the page from this document point at a PDF that is gone.
      for (const item of /** @type {NodeListOf<HTMLElement>} */ ($("results").querySelectorAll("li[data-document-id]"))) {
        if (item.dataset.documentId === d.id) item.remove();
      }
      showError(null);
    } catch (err) {
      showError(err);
    }
  }

  function render() {
    $("documents").replaceChildren(...[...docs.values()].map(row));
  }

  // One document's event stream: replayed from its start, so nothing is missed between
  // the upload and the moment the stream opens.
  /** @param {string} id */
  function follow(id) {
    if (streams.has(id) || polled.has(id) || streams.size >= MAX_STREAMS) return;
    const source = new EventSource(`/v1/library/documents/${encodeURIComponent(id)}/events`);
    streams.set(id, source);
    /** @param {(d: ApiJson) => object} change */
    const update = (change) => {
      const d = docs.get(id);
      if (!d) return;
      Object.assign(d, change(d));
      render();
    };
    // An event's data as the ingestion publishes it, typed by the generated contract
    // (contracts.js: DocumentEventData; events_lost is the API's, from JobEventData), so
    // a renamed event type or field fails the type check.
    /**
     * @template {keyof DocumentStreamData} K
     * @param {K} type @param {(data: DocumentStreamData[K], d: ApiJson) => object} fn
     */
    const on = (type, fn) => source.addEventListener(type, (e) => update((d) => fn(JSON.parse(/** @type {MessageEvent} */ (e).data), d)));
    const end = () => { source.close(); streams.delete(id); followWaiting(); };
    on("document.parsed", (x, d) => ({ status: d.status === "queued" || d.status === "parsing" ? "embedding" : d.status,
      pages: x.pages, progress: { pages: x.pages, chunks: x.chunks } }));
    on("document.batch", (x, d) => ({ progress: { ...d.progress, done: x.done, total: x.total } }));
    on("document.ready", (x) => { end(); return { status: "ready", pages: x.pages, chunks: x.chunks, progress: x }; });
    on("document.failed", (x) => { end(); return { status: "failed", error: x.reason || "failed", progress: {} }; });
    on("events_lost", () => { end(); return {}; });
    // The server ends the stream after the last event; an error before that means the
    // stream broke (no EventSource support behind a proxy, Redis gone): poll instead.
    source.onerror = () => {
      if (!streams.has(id)) return;
      end();
      const d = docs.get(id);
      if (d && !DONE.has(d.status)) { polled.add(id); schedule(FALLBACK_POLL_MS); }
    };
  }

  function followWaiting() {
    for (const d of docs.values()) if (!DONE.has(d.status)) follow(d.id);
  }

  /** @param {ApiJson[]} fresh */
  function merge(fresh) {
    /** @type {Set<string>} */
    const seen = new Set();
    for (const d of fresh) {
      seen.add(d.id);
      const known = docs.get(d.id);
      // A live stream knows more than the row (progress): keep it until the row is done.
      if (known && streams.has(d.id) && !DONE.has(d.status)) continue;
      docs.set(d.id, { ...d, progress: known ? known.progress : undefined });
    }
    for (const id of [...docs.keys()]) if (!seen.has(id)) docs.delete(id);
  }

  /** @param {number} ms */
  function schedule(ms) {
    clearTimeout(/** @type {ReturnType<typeof setTimeout> | undefined} */ (listTimer));  // null: a no-op
    listTimer = setTimeout(loadDocuments, ms);
  }

  async function loadDocuments() {
    clearTimeout(/** @type {ReturnType<typeof setTimeout> | undefined} */ (listTimer));
    try {
      merge((await api("GET", "/v1/library/documents")).items);
      render();
      followWaiting();
      showError(null);
    } catch (err) {
      showError(err);
    }
    const polling = [...polled].some((id) => docs.has(id) && !DONE.has(docs.get(id).status));
    schedule(polling ? FALLBACK_POLL_MS : LIST_REFRESH_MS);
  }

  // ---- search ---------------------------------------------------------------------
  /** @param {ApiJson} h a search hit */
  function hit(h) {
    const title = h.title || h.filename || "(untitled)";
    // Section and page, or the locator when neither is known (never both: the locator
    // repeats them).
    const where = [h.section && `section ${h.section}`, h.page && `page ${h.page}`].filter(Boolean).join(" · ") || h.locator || "";
    const tableHit = h.kind === "table";
    return el("li", { "data-testid": "search-hit", "data-document-id": h.document_id || "", "data-kind": h.kind || "text" },
      tableHit ? el("span", { class: "badge kind-badge", "data-testid": "hit-kind", text: "table" }) : null,
      h.document_id
        ? el("a", { href: pdfLink(h.document_id, h.page), target: "_blank", rel: "noopener", class: "hit-title", text: title })
        : el("strong", { text: title }),
      el("div", { class: "where" }, el("span", { text: h.filename || "" }), where ? " — " : "",
        el("span", { "data-testid": "hit-where", text: where }), ` · score ${Number(h.score).toFixed(3)}`),
      tableHit ? tableBody(h.text || "") : el("p", { class: "snippet", text: (h.text || "").slice(0, 600) }));
  }

  // A table chunk is its caption, a blank line, then a Markdown table: shown as a table.
  /** @param {string} text */
  function tableBody(text) {
    const box = el("div", { class: "snippet table-hit", "data-testid": "hit-table" });
    if (typeof LeaflabMarkdown === "undefined") box.textContent = text;
    else LeaflabMarkdown.renderInto(box, text);
    return box;
  }

  function wireSearch() {
    $("search-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const params = new URLSearchParams({ q: /** @type {HTMLInputElement} */ ($("q")).value, mode: /** @type {HTMLSelectElement} */ ($("mode")).value, k: /** @type {HTMLInputElement} */ ($("k")).value || "10" });
      if (/** @type {HTMLSelectElement} */ ($("kind")).value) params.set("kind", /** @type {HTMLSelectElement} */ ($("kind")).value);
      $("search-status").textContent = "searching…";
      try {
        /** @type {ApiJson[]} */
        const items = (await api("GET", "/v1/library/search?" + params)).items;
        $("results").replaceChildren(...items.map(hit));
        $("search-status").textContent = `${items.length} result(s), mode ${params.get("mode")}`;
        showError(null);
      } catch (err) {
        $("results").replaceChildren();
        $("search-status").textContent = "";
        showError(err);
      }
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    wireUploads();
    wireSearch();
    // An import (library_import.js) added documents: show them without a reload.
    document.addEventListener("leaflab:library-changed", () => loadDocuments());
    loadDocuments().then(() => { document.body.dataset.libraryReady = "1"; });
  });
})();
