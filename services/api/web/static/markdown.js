// Markdown as Leaflab's pages show it (chat answers, survey reports, a job's answer):
// markdown-it (tables, fenced code, links), KaTeX maths (markdown_math.js), highlight.js
// colouring, [@key] citation groups (markdown_citations.js), all from static/vendor/.
//
// The text is untrusted (a model wrote it, maybe steered by a page it read), so two walls:
// markdown-it runs with html:false, so raw HTML in the text is shown as the characters it is
// and javascript:/vbscript:/data: links are refused; then DOMPurify sanitises the HTML that
// markdown-it and the plugins made, so a bug in either still cannot run script. Without
// the libraries (a script failed to load) the text is shown as plain text: never unsanitised.
"use strict";
const LeaflabMarkdown = (() => {
  /** @type {MarkdownIt | null} */
  let engine = null;

  /** @param {string} code @param {string} lang @param {(s: string) => string} escapeHtml @returns {string} */
  function highlight(code, lang, escapeHtml) {
    const hl = typeof hljs === "undefined" ? null : hljs;
    if (!hl || !lang || !hl.getLanguage(lang)) return ""; // markdown-it escapes it then
    try {
      const html = hl.highlight(code, { language: lang, ignoreIllegals: true }).value;
      return `<pre><code class="hljs language-${escapeHtml(lang)}">${html}</code></pre>`;
    } catch (_) {
      return "";
    }
  }

  // A report's own "# Title" sits under the page's <h1>/<h2>: ``headingShift`` pushes it down.
  /** @typedef {(tokens: MarkdownItToken[], i: number, opts: object, env: any, self: any) => string} RenderRule */
  /** @param {MarkdownIt} md */
  function shiftHeadings(md) {
    /** @type {RenderRule} */
    const base = md.renderer.rules.heading_open || (/** @type {RenderRule} */ (tokens, i, opts, env, self) => self.renderToken(tokens, i, opts));
    /** @type {RenderRule} */
    md.renderer.rules.heading_open = (tokens, i, opts, env, self) => {
      const shift = (env && env.headingShift) || 0;
      const level = Math.min(6, Number(tokens[i].tag.slice(1)) + shift);
      tokens[i].tag = `h${level}`;
      tokens[i + 2].tag = `h${level}`; // its heading_close
      return base(tokens, i, opts, env, self);
    };
  }

  /** @returns {MarkdownIt | null} */
  function markdownEngine() {
    if (engine) return engine;
    if (typeof markdownit === "undefined" || typeof DOMPurify === "undefined" || !DOMPurify.isSupported) return null;
    const md = markdownit({ html: false, linkify: true, typographer: false,
      highlight: (/** @type {string} */ code, /** @type {string} */ lang) => highlight(code, lang, md.utils.escapeHtml) });
    if (typeof katex !== "undefined") md.use(LeaflabMarkdownMath.plugin);
    md.use(LeaflabMarkdownCitations.plugin);
    shiftHeadings(md);
    engine = md;
    return md;
  }

  // Each [@key] placeholder becomes the page's node for it, or plain "@key" text.
  /** @param {ParentNode} root @param {((key: string) => Node) | undefined} citation */
  function fillCitations(root, citation) {
    for (const slot of root.querySelectorAll("span.cite-slot[data-cite-key]")) {
      const key = /** @type {string} */ (/** @type {HTMLElement} */ (slot).dataset.citeKey);
      slot.replaceWith(citation ? citation(key) : document.createTextNode(`@${key}`));
    }
  }

  // A model's links open apart from the conversation and tell the other site nothing.
  /** @param {ParentNode} root */
  function openLinksApart(root) {
    for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (root.querySelectorAll("a[href]"))) {
      a.target = "_blank";
      a.rel = "noopener noreferrer";
    }
  }

  /** @param {string} text */
  function plain(text) {
    const p = document.createElement("p");
    p.className = "md-plain";
    p.textContent = text;
    const frag = document.createDocumentFragment();
    frag.append(p);
    return frag;
  }

  /** The Markdown ``text`` as a sanitised DocumentFragment. Options: ``citation`` (key →
   * Node, for [@key] groups) and ``headingShift`` (levels to push headings down).
   * @typedef {{citation?: (key: string) => Node, headingShift?: number}} RenderOptions
   * @param {unknown} text @param {RenderOptions} [options] @returns {DocumentFragment} */
  function render(text, options = {}) {
    const source = String(text ?? "");
    const md = markdownEngine();
    if (!md) return plain(source);
    const html = md.render(source, { headingShift: options.headingShift || 0 });
    /** @type {DocumentFragment} */
    const frag = DOMPurify.sanitize(html, { RETURN_DOM_FRAGMENT: true });
    // markdown-it ends each block with "\n": between top-level blocks it only adds a space
    // to the text a reader (or a test) gets from the element.
    for (const n of [...frag.childNodes]) if (n.nodeType === Node.TEXT_NODE && !(/** @type {Text} */ (n)).data.trim()) n.remove();
    // DOMPurify drops MathML's <semantics>/<annotation> (an mXSS risk) but keeps the TeX
    // source they held as loose text in <math>: a screen reader would read it twice.
    for (const m of frag.querySelectorAll("math")) for (const n of [...m.childNodes]) if (n.nodeType === Node.TEXT_NODE) n.remove();
    fillCitations(frag, options.citation);
    openLinksApart(frag);
    return frag;
  }

  /**
   * Replaces ``node``'s children with the rendered ``text``; marks it for the page's CSS.
   * @template {Element} T @param {T} node @param {unknown} text @param {RenderOptions} [options] @returns {T}
   */
  function renderInto(node, text, options) {
    node.replaceChildren(render(text, options));
    node.classList.add("md");
    return node;
  }

  return { render, renderInto };
})();
