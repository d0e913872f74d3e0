// The library page's "Import bibliography": post a .bib / CSL-JSON / Better BibTeX JSON
// file, or a Zotero library's id and API key (JSON; the key field is cleared at once and
// the key kept nowhere), to /v1/library/imports (into the library the upload menu names), then poll the
// import until it is done, showing done/total and the summary — matched, fetched,
// metadata-only, skipped, each skipped entry with its reason. Entry keys, titles and
// reasons come from the user's file: they only ever become text nodes.
"use strict";
(() => {
  const { api, el } = Leaflab;
  // The library page's elements (library.html): there, or the page is broken anyway.
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const POLL_MS = 700;

  /** @param {ApiJson} job an import as /v1/library/imports answers it */
  function summaryText(job) {
    const s = job.summary;
    return `${s.matched} matched, ${s.fetched} fetched, ${s.metadata_only} metadata-only, ` +
      `${s.skipped} skipped`;
  }

  /** @param {HTMLElement} box @param {ApiJson} job */
  function render(box, job) {
    box.dataset.status = job.status;
    const bar = el("progress", { max: String(job.total), value: String(job.done),
      "aria-label": "entries settled" });
    const state = job.status === "done" ? "done" : `${job.done}/${job.total} entries`;
    const parts = [
      el("strong", { text: job.filename || "bibliography" }),
      ` (${job.format}, ${job.total} entries, ${job.collection_name || job.collection}): `,
      el("span", { "data-testid": "import-progress", text: state }), " ", bar,
      el("p", { "data-testid": "import-summary", text: summaryText(job) }),
    ];
    /** @type {ApiJson[]} */
    const skipped = (job.entries || []).filter((/** @type {ApiJson} */ e) => e.state === "skipped");
    if (skipped.length) {
      parts.push(el("ul", { "data-testid": "import-skipped" }, ...skipped.map((e) =>
        el("li", { text: `${e.key || "entry " + (e.ordinal + 1)}: ${e.reason || ""}` }))));
    }
    if (job.error) parts.push(el("p", { class: "error", text: job.error }));
    box.replaceChildren(...parts);
  }

  /** @param {HTMLElement} box @param {string} id */
  async function follow(box, id) {
    for (;;) {
      const job = await api("GET", `/v1/library/imports/${encodeURIComponent(id)}`);
      render(box, job);
      if (job.status === "done") return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** @param {Record<string, any>} body @returns {Record<string, any>} */
  function target(body) {
    const project = /** @type {HTMLInputElement} */ ($("lib-project")).value.trim();
    if (project) body.project = project;
    else if (/** @type {HTMLSelectElement} */ ($("lib-target")).value === "lab") body.collection = "lab";
    return body;
  }

  /** @param {HTMLElement} box @param {string} name @param {() => Promise<ApiJson>} post */
  async function run(box, name, post) {
    $("imports").prepend(box);
    try {
      const job = await post();
      render(box, job);
      await follow(box, job.id);
      document.dispatchEvent(new CustomEvent("leaflab:library-changed"));
    } catch (err) {
      box.dataset.status = "refused";
      box.replaceChildren(el("span", { class: "error", "data-testid": "import-refused",
        text: `${name}: refused: ${/** @type {LeaflabApiError} */ (err).message}` }));
    }
  }

  /** @param {File} file */
  function importFile(file) {
    const box = el("div", { class: "card", "data-testid": "import-item" },
      el("span", { text: `${file.name}: uploading…` }));
    const form = new FormData();
    form.append("file", file, file.name);
    for (const [k, v] of Object.entries(target({}))) form.append(k, v);
    return run(box, file.name, () => api("POST", "/v1/library/imports", form));
  }

  /** @param {SubmitEvent} event */
  function importZotero(event) {
    event.preventDefault();
    const kind = /** @type {HTMLSelectElement} */ ($("zotero-kind")).value === "group" ? "group" : "user";
    const id = /** @type {HTMLInputElement} */ ($("zotero-id")).value.trim();
    const key = /** @type {HTMLInputElement} */ ($("zotero-key")).value.trim();
    /** @type {HTMLInputElement} */ ($("zotero-key")).value = "";  // used once, for this request
    const name = `zotero ${kind} ${id}`;
    const box = el("div", { class: "card", "data-testid": "import-item" },
      el("span", { text: `${name}: reading the library…` }));
    const body = target({ zotero: { [kind]: id, key } });
    return run(box, name, () => api("POST", "/v1/library/imports", body));
  }

  document.addEventListener("DOMContentLoaded", () => {
    const input = /** @type {HTMLInputElement} */ ($("lib-bib"));
    input.addEventListener("change", () => {
      const files = [.../** @type {FileList} */ (input.files)];
      input.value = "";
      files.forEach(importFile);
    });
    $("zotero-form").addEventListener("submit", importZotero);
  });
})();
