// The admin dashboard's MCP section: the server list in force (and where it comes from),
// edited as JSON. The API validates (422 naming the entry and field); its message is shown
// under the textarea and nothing is saved. Server data only enters the page as text.
"use strict";
(() => {
  const { api, el } = Leaflab;
  /** @param {string} id @returns {HTMLElement} */
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

  /** @param {any} err anything thrown, or null to clear */
  function showError(err) {
    const box = $("mcp-error");
    box.textContent = err ? String(err.message || err) : "";
    box.hidden = !err;
  }

  /** @param {ApiJson} listing /v1/admin/mcp-servers's answer */
  function render(listing) {
    const source = listing.source === "database"
      ? `Stored list (version ${listing.version}), in force; LEAFLAB_MCP_SERVERS is ignored.`
      : "From LEAFLAB_MCP_SERVERS (no stored list).";
    $("mcp-source").textContent = source + (listing.environment_error ? ` The environment's list is invalid: ${listing.environment_error}` : "");
    $("mcp-source").dataset.source = listing.source;
    $("mcp-rows").replaceChildren(...listing.servers.map((/** @type {ApiJson} */ s) => el("tr", { "data-server": s.name },
      el("td", {}, s.name),
      el("td", {}, s.command ? "stdio: " + s.command.join(" ") : "http: " + s.url),
      el("td", {}, s.command ? s.isolation : "—"),
      el("td", {}, s.projects ? s.projects.join(", ") : "all"),
      el("td", {}, s.approval ? "yes" : "no"))));
    const editable = listing.stored ?? listing.servers.map((/** @type {ApiJson} */ s) => Object.fromEntries(
      Object.entries(s).filter(([k, v]) => v !== null && !(k === "approval" && !v) && !(k === "isolation" && (v === "sandbox" || !s.command)))));
    /** @type {HTMLTextAreaElement} */ ($("mcp-json")).value = JSON.stringify(editable, null, 2);
  }

  async function load() { render(await api("GET", "/v1/admin/mcp-servers")); }

  /** @param {(ev?: Event) => unknown} fn @returns {(ev?: Event) => Promise<void>} */
  const guarded = (fn) => async (ev) => {
    if (ev && ev.preventDefault) ev.preventDefault();
    try { showError(null); await fn(ev); } catch (err) { showError(err); }
  };

  document.addEventListener("DOMContentLoaded", guarded(async () => {
    $("mcp-form").addEventListener("submit", guarded(async () => {
      let servers;
      try { servers = JSON.parse(/** @type {HTMLTextAreaElement} */ ($("mcp-json")).value); } catch (err) {
        throw new Error("Not valid JSON: " + /** @type {SyntaxError} */ (err).message);
      }
      if (!Array.isArray(servers)) throw new Error("The list must be a JSON array of servers.");
      render(await api("PUT", "/v1/admin/mcp-servers", { servers }));
    }));
    $("mcp-clear").addEventListener("click", guarded(async () => {
      render(await api("DELETE", "/v1/admin/mcp-servers"));
    }));
    await load();
    document.body.dataset.mcpReady = "1";
  }));
})();
