// The library page's "Import bibliography": post a .bib / CSL-JSON / Better BibTeX JSON
// file to /v1/library/imports (into the library the upload menu names), then poll the
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

  async function importFile(file) {
    const box = el("div", { class: "card", "data-testid": "import-item" },
      el("span", { text: `${file.name}: uploading…` }));
    $("imports").prepend(box);
    const form = new FormData();
    form.append("file", file, file.name);
    const project = $("lib-project").value.trim();
    if (project) form.append("project", project);
    else if ($("lib-target").value === "lab") form.append("collection", "lab");
    try {
      const job = await api("POST", "/v1/library/imports", form);
      render(box, job);
      await follow(box, job.id);
      document.dispatchEvent(new CustomEvent("leaflab:library-changed"));
    } catch (err) {
      box.dataset.status = "refused";
      box.replaceChildren(el("span", { class: "error", "data-testid": "import-refused",
        text: `${file.name}: refused: ${err.message}` }));
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const input = $("lib-bib");
    input.addEventListener("change", () => {
      const files = [...input.files];
      input.value = "";
      files.forEach(importFile);
    });
  });
})();
