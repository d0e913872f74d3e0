// A markdown-it plugin for pandoc-style citation groups, as survey reports write them:
// "[@key]", "[@a; @b]". Each key becomes a placeholder <span data-cite-key>; the page swaps
// in its own node for it afterwards (LeaflabMarkdown.render's ``citation``), so a key links
// to its library document without the Markdown knowing about papers. Parts that are not a
// key ("[see @x, p. 3]") stay text; "[@x](url)" stays a link.
"use strict";
const LeaflabMarkdownCitations = (() => {
  const KEY = /^@([A-Za-z0-9_:.-]+)$/;

  /** @param {MarkdownItState} state @param {boolean} silent @returns {boolean} */
  function group(state, silent) {
    const src = state.src;
    if (src[state.pos] !== "[") return false;
    const end = src.indexOf("]", state.pos + 1);
    if (end === -1 || end >= state.posMax) return false;
    const inner = src.slice(state.pos + 1, end);
    if (inner.includes("[") || !inner.includes("@") || src[end + 1] === "(") return false;
    if (!silent) {
      const token = state.push("citation_group", "", 0);
      token.meta = { parts: inner.split(";").map((/** @type {string} */ p) => p.trim()).filter(Boolean) };
    }
    state.pos = end + 1;
    return true;
  }

  /** @param {MarkdownIt} md */
  function plugin(md) {
    const esc = md.utils.escapeHtml;
    // Before "link": the group claims its brackets first (and keys keep their _ and *).
    md.inline.ruler.before("link", "citation_group", group);
    md.renderer.rules.citation_group = (/** @type {MarkdownItToken[]} */ tokens, /** @type {number} */ i) => {
      const parts = tokens[i].meta.parts.map((/** @type {string} */ p) => {
        const m = KEY.exec(p);
        return m ? `<span class="cite-slot" data-cite-key="${esc(m[1])}">@${esc(m[1])}</span>` : esc(p);
      });
      return `[${parts.join("; ")}]`;
    };
  }

  return { plugin };
})();
