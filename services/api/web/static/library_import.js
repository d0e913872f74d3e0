// The library page's "Import bibliography": post a .bib / CSL-JSON / Better BibTeX JSON
// file, or a Zotero library's id and API key (JSON; the key field is cleared at once and
// the key kept nowhere), to /v1/library/imports (into the library the upload menu names), then poll the
// import until it is done, showing done/total and the summary — matched, fetched,
// metadata-only, skipped, each skipped entry with its reason. Entry keys, titles and
// reasons come from the user's file: they only ever become text nodes.
"use strict";
(() => {
  const { api, el } = Leaflab;
  const $ = (id) => document.getElementById(id);
  const POLL_MS = 700;

  function summaryText(job) {
    const s = job.summary;
    return `${s.matched} matched, ${s.fetched} fetched, ${s.metadata_only} metadata-only, ` +
      `${s.skipped} skipped`;
  }

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
    const skipped = (job.entries || []).filter((e) => e.state === "skipped");
    if (skipped.length) {
      parts.push(el("ul", { "data-testid": "import-skipped" }, ...skipped.map((e) =>
        el("li", { text: `${e.key || "entry " + (e.ordinal + 1)}: ${e.reason || ""}` }))));
    }
    if (job.error) parts.push(el("p", { class: "error", text: job.error }));
    box.replaceChildren(...parts);
  }

  async function follow(box, id) {
    for (;;) {
      const job = await api("GET", `/v1/library/imports/${encodeURIComponent(id)}`);
      render(box, job);
      if (job.status === "done") return;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  function target(body) {
    const project = $("lib-project").value.trim();
    if (project) body.project = project;
    else if ($("lib-target").value === "lab") body.collection = "lab";
    return body;
  }

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
        text: `${name}: refused: ${err.message}` }));
    }
  }

  function importFile(file) {
    const box = el("div", { class: "card", "data-testid": "import-item" },
      el("span", { text: `${file.name}: uploading…` }));
    const form = new FormData();
    form.append("file", file, file.name);
    for (const [k, v] of Object.entries(target({}))) form.append(k, v);
    return run(box, file.name, () => api("POST", "/v1/library/imports", form));
  }

  function importZotero(event) {
    event.preventDefault();
    const kind = $("zotero-kind").value === "group" ? "group" : "user";
    const id = $("zotero-id").value.trim();
    const key = $("zotero-key").value.trim();
    $("zotero-key").value = "";  // used once, for this request
    const name = `zotero ${kind} ${id}`;
    const box = el("div", { class: "card", "data-testid": "import-item" },
      el("span", { text: `${name}: reading the library…` }));
    const body = target({ zotero: { [kind]: id, key } });
    return run(box, name, () => api("POST", "/v1/library/imports", body));
  }

  document.addEventListener("DOMContentLoaded", () => {
    const input = $("lib-bib");
    input.addEventListener("change", () => {
      const files = [...input.files];
      input.value = "";
      files.forEach(importFile);
    });
    $("zotero-form").addEventListener("submit", importZotero);
  });
})();
