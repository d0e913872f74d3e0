// A tiny, safe Markdown subset for survey reports: headings, paragraphs, bullet and numbered
// lists, **bold**, *italic*, `code`, and [@key; @key] citation groups. It builds DOM nodes
// with text content only (never innerHTML), so anything in the report — a topic with
// <script>, a title with markup — is shown as the characters it is.
"use strict";
const SurveyMarkdown = (() => {
  const HEADING = /^(#{1,6})\s+(.*)$/;
  const BULLET = /^\s*[-*+]\s+(.*)$/;
  const NUMBERED = /^\s*\d{1,3}[.)]\s+(.*)$/;
  const CITATION = /\[([^[\]]*@[^[\]]*)\]/g;
  const CITE_KEY = /^@([A-Za-z0-9_:.\-]+)$/;
  const EMPHASIS = /(\*\*[^*]+\*\*|`[^`]+`|\*[^*\s][^*]*\*)/;

  const text = (s) => document.createTextNode(s);
  const node = (tag, children) => { const n = document.createElement(tag); n.append(...children); return n; };

  function emphasis(s) {
    const out = [];
    for (const part of s.split(EMPHASIS)) {
      if (!part) continue;
      if (part.length > 4 && part.startsWith("**") && part.endsWith("**")) out.push(node("strong", [text(part.slice(2, -2))]));
      else if (part.length > 2 && part.startsWith("`") && part.endsWith("`")) out.push(node("code", [text(part.slice(1, -1))]));
      else if (part.length > 2 && part.startsWith("*") && part.endsWith("*")) out.push(node("em", [text(part.slice(1, -1))]));
      else out.push(text(part));
    }
    return out;
  }

  function citeGroup(inner, cite) {
    const out = [text("[")];
    inner.split(";").map((k) => k.trim()).filter(Boolean).forEach((k, i) => {
      if (i) out.push(text("; "));
      const m = CITE_KEY.exec(k);
      out.push(m ? cite(m[1]) : text(k));
    });
    out.push(text("]"));
    return out;
  }

  // Citations first (a key may hold characters emphasis would eat), then emphasis.
  function inline(s, cite) {
    const out = [];
    let last = 0;
    for (const m of s.matchAll(CITATION)) {
      out.push(...emphasis(s.slice(last, m.index)), ...citeGroup(m[1], cite));
      last = m.index + m[0].length;
    }
    out.push(...emphasis(s.slice(last)));
    return out;
  }

  // ``shift`` pushes heading levels down (the page's own <h1>/<h2> come first).
  function render(markdown, cite, shift = 1) {
    const root = document.createDocumentFragment();
    let para = [];
    let list = null;
    const flush = () => { if (para.length) root.append(node("p", inline(para.join(" "), cite))); para = []; };
    for (const raw of String(markdown).split(/\r?\n/)) {
      const line = raw.trim();
      let m;
      if (!line) { flush(); list = null; continue; }
      if ((m = HEADING.exec(line))) {
        flush(); list = null;
        root.append(node(`h${Math.min(6, m[1].length + shift)}`, inline(m[2], cite)));
        continue;
      }
      const bullet = BULLET.exec(raw);
      const numbered = bullet ? null : NUMBERED.exec(raw);
      if (bullet || numbered) {
        flush();
        const tag = bullet ? "UL" : "OL";
        if (!list || list.tagName !== tag) { list = node(tag, []); root.append(list); }
        list.append(node("li", inline((bullet || numbered)[1], cite)));
        continue;
      }
      if (list) { list.lastElementChild.append(text(" "), ...inline(line, cite)); continue; }
      para.push(line);
    }
    flush();
    return root;
  }

  return { render };
})();
