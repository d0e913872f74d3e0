// Slash commands in the chat input: typing "/" lists /compact and the session's skills
// (GET /v1/sessions/{id}/commands) as a listbox under the input. Arrow keys move the
// active option (announced through aria-activedescendant), Enter or Tab picks it,
// Escape closes the list; the chosen command goes into the input, ready to send.
"use strict";
const ChatCommands = (() => {
  /** @type {typeof Leaflab.el} */
  const el = (...a) => Leaflab.el(...a);
  // A lone partial command (no space yet) is what the list completes.
  const PARTIAL = /^\/[a-z0-9_-]*$/;

  /** @typedef {{command: string, description: string, kind: string}} SlashCommand */
  /** @param {HTMLTextAreaElement} input @param {HTMLElement} list the listbox under it */
  function attach(input, list) {
    /** @type {SlashCommand[]} */
    let commands = [];
    /** @type {SlashCommand[]} */
    let shown = [];
    let active = -1;

    function close() {
      list.hidden = true;
      shown = [];
      active = -1;
      input.removeAttribute("aria-activedescendant");
    }

    /** @param {number} index */
    function highlight(index) {
      active = index;
      list.querySelectorAll("[role=option]").forEach((opt, i) => opt.setAttribute("aria-selected", String(i === index)));
      const current = list.querySelector(`#slash-opt-${index}`);
      if (current) { input.setAttribute("aria-activedescendant", current.id); current.scrollIntoView({ block: "nearest" }); }
    }

    /** @param {number} index */
    function choose(index) {
      const c = shown[index];
      if (!c) return;
      input.value = `${c.command} `;
      close();
      input.focus();
      input.setSelectionRange(input.value.length, input.value.length);
    }

    function update() {
      const text = input.value;
      shown = PARTIAL.test(text) ? commands.filter((c) => c.command.startsWith(text)) : [];
      if (!shown.length) { close(); return; }
      list.replaceChildren(...shown.map((c, i) => el("li", {
        id: `slash-opt-${i}`, role: "option", "aria-selected": "false", "data-testid": "slash-option",
        "data-command": c.command, "data-kind": c.kind,
        onmousedown: (/** @type {MouseEvent} */ e) => e.preventDefault(), // keep the focus in the input
        onclick: () => choose(i),
      }, el("span", { class: "slash-name", text: c.command }), el("span", { class: "slash-desc muted", text: c.description }))));
      list.hidden = false;
      highlight(Math.min(Math.max(active, 0), shown.length - 1));
    }

    // Called first by the input's keydown handler; true when the key was the list's.
    /** @param {KeyboardEvent} e @returns {boolean} */
    function handleKey(e) {
      if (list.hidden || !shown.length) return false;
      if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        const step = e.key === "ArrowDown" ? 1 : -1;
        highlight((active + step + shown.length) % shown.length);
      } else if ((e.key === "Enter" && !e.shiftKey) || e.key === "Tab") {
        choose(active < 0 ? 0 : active);
      } else if (e.key === "Escape") {
        close();
      } else {
        return false;
      }
      e.preventDefault();
      return true;
    }

    /** @param {string | null | undefined} sessionId */
    async function load(sessionId) {
      if (!sessionId) { commands = [{ command: "/compact", description: "Summarise the conversation so far", kind: "builtin" }]; return; }
      commands = (await Leaflab.api("GET", `/v1/sessions/${encodeURIComponent(sessionId)}/commands`)).items;
      // A "/" typed while the list was loading gets its completions now.
      if (document.activeElement === input) update();
    }

    input.addEventListener("input", update);
    input.addEventListener("blur", close);
    close();
    return { load, handleKey, close };
  }

  return { attach };
})();
