// A markdown-it plugin for TeX maths, typeset by KaTeX: $…$ and \(…\) inline, $$…$$ and
// \[…\] as display maths (inline or as a block of their own lines). Written here, not taken
// from an unvetted plugin: it is two tokenizer rules and two renderer rules.
// A lone "$5 and $10" stays text: an opening $ must touch its formula and a closing one must
// not be followed by a digit (pandoc's rule). An unclosed formula (a stream half-way) stays
// text until its closing mark arrives.
"use strict";
const LeaflabMarkdownMath = (() => {
  const SPACE = /\s/;
  const DIGIT = /[0-9]/;
  // Streaming re-renders the whole message every frame: typeset each formula once.
  /** @type {Map<string, string>} */
  const typeset = new Map();
  const TYPESET_KEEP = 500;

  /** @param {string} source @param {boolean} display @param {(s: string) => string} escapeHtml @returns {string} */
  function tex(source, display, escapeHtml) {
    const key = `${display ? "D" : "I"}${source}`;
    let html = typeset.get(key);
    if (html !== undefined) return html;
    try {
      // trust:false (the default) keeps \href{javascript:…}, \url and \html… commands out.
      html = /** @type {string} */ (katex.renderToString(source, { displayMode: display, throwOnError: false, trust: false }));
    } catch (_) {
      // throwOnError:false covers TeX errors; anything else shows the source as typed.
      html = `<code class="math-error">${escapeHtml(source)}</code>`;
    }
    if (typeset.size >= TYPESET_KEEP) typeset.delete(/** @type {string} */ (typeset.keys().next().value));
    typeset.set(key, html);
    return html;
  }

  // Where the formula opened at ``start`` closes, or -1.
  /** @param {string} src @param {number} start @param {number} max @param {string} close @param {boolean} dollar */
  function closing(src, start, max, close, dollar) {
    let at = start;
    while ((at = src.indexOf(close, at)) !== -1 && at + close.length <= max) {
      const escaped = src[at - 1] === "\\" && close[0] === "$";
      const loose = dollar && close === "$" && (SPACE.test(src[at - 1]) || DIGIT.test(src[at + 1] || ""));
      if (!escaped && !loose && at > start) return at;
      at += 1;
    }
    return -1;
  }

  /** @param {MarkdownItState} state @param {boolean} silent @returns {boolean} */
  function inline(state, silent) {
    const src = state.src;
    const pos = state.pos;
    let open;
    let close;
    if (src.startsWith("$$", pos)) { open = "$$"; close = "$$"; }
    else if (src[pos] === "$") { open = "$"; close = "$"; }
    else if (src.startsWith("\\(", pos)) { open = "\\("; close = "\\)"; }
    else if (src.startsWith("\\[", pos)) { open = "\\["; close = "\\]"; }
    else return false;
    const start = pos + open.length;
    if (open === "$" && (start >= state.posMax || SPACE.test(src[start]))) return false;
    const end = closing(src, start, state.posMax, close, open[0] === "$");
    if (end === -1) return false;
    if (!silent) {
      const token = state.push("math_inline", "math", 0);
      token.content = src.slice(start, end);
      token.markup = open;
      token.meta = { display: open === "$$" || open === "\\[" };
    }
    state.pos = end + close.length;
    return true;
  }

  // $$ (or \[) opening a line, the formula on the following lines, $$ (or \]) ending one.
  /** @param {MarkdownItState} state @param {number} startLine @param {number} endLine @param {boolean} silent @returns {boolean} */
  function block(state, startLine, endLine, silent) {
    const first = state.src.slice(state.bMarks[startLine] + state.tShift[startLine], state.eMarks[startLine]);
    if (state.sCount[startLine] - state.blkIndent >= 4) return false;
    const open = first.startsWith("$$") ? "$$" : first.startsWith("\\[") ? "\\[" : null;
    if (!open) return false;
    const close = open === "$$" ? "$$" : "\\]";
    const lines = [first.slice(open.length)];
    let line = startLine;
    for (;;) {
      const text = lines[lines.length - 1].trimEnd();
      if (text.endsWith(close) && (line > startLine || text.length >= close.length)) {
        lines[lines.length - 1] = text.slice(0, -close.length);
        break;
      }
      line += 1;
      if (line >= endLine) return false;
      const lineStart = state.bMarks[line] + state.tShift[line];
      if (state.isEmpty(line) && open === "\\[") return false;
      lines.push(state.src.slice(lineStart, state.eMarks[line]));
    }
    // A "$$x$$ and more" line is inline maths inside a paragraph, not a block.
    if (line === startLine && first.trimEnd().slice(open.length, -close.length).includes(close)) return false;
    if (silent) return true;
    const token = state.push("math_block", "math", 0);
    token.block = true;
    token.content = lines.join("\n").trim();
    token.markup = open;
    token.map = [startLine, line + 1];
    state.line = line + 1;
    return true;
  }

  /** @param {MarkdownIt} md */
  function plugin(md) {
    const esc = md.utils.escapeHtml;
    md.inline.ruler.before("escape", "math_inline", inline);
    md.block.ruler.before("fence", "math_block", block, { alt: ["paragraph", "reference", "blockquote", "list"] });
    md.renderer.rules.math_inline = (/** @type {MarkdownItToken[]} */ tokens, /** @type {number} */ i) => {
      const t = tokens[i];
      const html = tex(t.content, t.meta.display, esc);
      return t.meta.display ? `<span class="math-display">${html}</span>` : html;
    };
    md.renderer.rules.math_block = (/** @type {MarkdownItToken[]} */ tokens, /** @type {number} */ i) => `<div class="math-display">${tex(tokens[i].content, true, esc)}</div>\n`;
  }

  return { plugin };
})();
