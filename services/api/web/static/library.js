// The library page: upload PDFs (file input or drag and drop, several at once), follow their
// ingestion by polling the document list, search with a mode, open a hit's PDF at its page.
// Filenames, titles and snippets are the uploader's data: they only ever become text nodes.
"use strict";
(() => {
  const { api, el } = Leaflab;
  const $ = (id) => document.getElementById(id);
  const FAST_POLL_MS = 1500;   // while something is being ingested
  const SLOW_POLL_MS = 10000;  // otherwise (someone else may upload into a shared project)
  const PARALLEL_UPLOADS = 3;
  const DONE = new Set(["ready", "failed"]);
  let pollTimer = null;

  function showError(err) {
    const box = $("library-error");
    box.textContent = err ? String(err.message || err) : "";
    box.hidden = !err;
  }

  const pdfLink = (documentId, page) =>
    `/v1/library/documents/${encodeURIComponent(documentId)}/pdf` + (page ? `#page=${page}` : "");

  // ---- uploads ----------------------------------------------------------------
  async function uploadOne(file) {
    const item = el("li", { "data-testid": "upload-item" }, el("span", { text: file.name }), " — ",
      el("span", { class: "upload-state", text: "uploading…" }));
    $("uploads").prepend(item);
    const state = item.querySelector(".upload-state");
    const form = new FormData();
    form.append("file", file, file.name);
    const project = $("lib-project").value.trim();
    if (project) form.append("project", project);
    try {
      const accepted = await api("POST", "/v1/library/documents", form);
      state.textContent = accepted.duplicate ? "already in the library" : "queued for ingestion";
      item.dataset.documentId = accepted.id;
    } catch (err) {
      state.textContent = "refused: " + err.message;
      state.classList.add("error");
    }
  }

  async function uploadAll(files) {
    const queue = [...files];
    const lanes = Array.from({ length: Math.min(PARALLEL_UPLOADS, queue.length) }, async () => {
      while (queue.length) await uploadOne(queue.shift());
    });
    await Promise.all(lanes);
    await loadDocuments();
  }

  function wireUploads() {
    const input = $("lib-files");
    input.addEventListener("change", () => { const files = [...input.files]; input.value = ""; uploadAll(files); });
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
  async function loadDocuments() {
    clearTimeout(pollTimer);
    let busy = false;
    try {
      const docs = (await api("GET", "/v1/library/documents")).items;
      busy = docs.some((d) => !DONE.has(d.status));
      $("documents").replaceChildren(...docs.map((d) => el("tr", { "data-document-id": d.id, "data-status": d.status },
        el("td", { text: d.title || "(untitled)" }),
        el("td", { text: d.filename || d.source_url || "" }),
        el("td", {}, el("span", { class: "badge status-" + d.status, text: d.status }),
          d.error ? el("span", { class: "error", text: " " + d.error }) : null),
        el("td", { text: d.pages ?? "" }), el("td", { text: d.chunks ?? "" }),
        el("td", {}, d.status === "ready" ? el("a", { href: pdfLink(d.id), target: "_blank", rel: "noopener", text: "PDF" }) : ""))));
      showError(null);
    } catch (err) {
      showError(err);
    }
    pollTimer = setTimeout(loadDocuments, busy ? FAST_POLL_MS : SLOW_POLL_MS);
  }

  // ---- search ---------------------------------------------------------------------
  function hit(h) {
    const title = h.title || h.filename || "(untitled)";
    const where = [h.section && `section ${h.section}`, h.page && `page ${h.page}`, h.locator].filter(Boolean).join(" · ");
    return el("li", { "data-testid": "search-hit", "data-document-id": h.document_id || "" },
      h.document_id
        ? el("a", { href: pdfLink(h.document_id, h.page), target: "_blank", rel: "noopener", class: "hit-title", text: title })
        : el("strong", { text: title }),
      el("div", { class: "where" }, el("span", { text: h.filename || "" }), where ? " — " : "",
        el("span", { "data-testid": "hit-where", text: where }), ` · score ${Number(h.score).toFixed(3)}`),
      el("p", { class: "snippet", text: (h.text || "").slice(0, 600) }));
  }

  function wireSearch() {
    $("search-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const params = new URLSearchParams({ q: $("q").value, mode: $("mode").value, k: $("k").value || "10" });
      $("search-status").textContent = "searching…";
      try {
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
    loadDocuments().then(() => { document.body.dataset.libraryReady = "1"; });
  });
})();
