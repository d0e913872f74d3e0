"""HTML → a title and readable text: the page's main content, without chrome.

Scripts, styles, navigation, headers, footers, forms and hidden elements are
dropped; the ``<article>`` or ``<main>`` element is preferred over the whole
body when a page has one. Block elements become paragraphs, headings keep a
``#`` marker, list items a ``-``, so the model can still see the structure.
The walk is iterative: a page nested thousands of levels deep cannot exhaust
the stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser, LexborNode

DROPPED = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "button",
    "select",
    "dialog",
)
HIDDEN = '[hidden], [aria-hidden="true"], [style*="display:none"], [style*="display: none"]'
BLOCKS = frozenset(
    "p div section article main li ul ol dl dt dd pre blockquote table tr figure "
    "figcaption h1 h2 h3 h4 h5 h6 br hr address details summary caption".split()
)
HEADINGS = {f"h{i}": "#" * i for i in range(1, 7)}
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")


@dataclass(frozen=True)
class PageText:
    title: str
    text: str


def html_to_text(html: str) -> PageText:
    """The page's title and its main text (unbounded; the caller caps it)."""
    tree = LexborHTMLParser(html)
    title = _title(tree)
    tree.strip_tags(list(DROPPED))
    for node in tree.css(HIDDEN):
        node.decompose()
    root = tree.css_first("article") or tree.css_first("main") or tree.body or tree.root
    text = _walk(root) if root is not None else ""
    return PageText(title=title, text=text)


def _title(tree: LexborHTMLParser) -> str:
    for selector, attr in (('meta[property="og:title"]', "content"), ("title", None)):
        node = tree.css_first(selector)
        if node is None:
            continue
        value = node.attributes.get(attr) if attr else node.text(strip=True)
        if value:
            return _SPACES.sub(" ", value).strip()
    heading = tree.css_first("h1")
    return _SPACES.sub(" ", heading.text(strip=True)).strip() if heading is not None else ""


def _walk(root: LexborNode) -> str:
    parts: list[str] = []
    # (node, entering) pairs: leaving a block closes its paragraph.
    stack: list[tuple[LexborNode, bool]] = [(root, True)]
    while stack:
        node, entering = stack.pop()
        tag = node.tag or ""
        if not entering:
            if tag in BLOCKS:
                parts.append("\n\n" if tag not in ("li", "tr", "br", "dt", "dd") else "\n")
            continue
        if tag == "-text":
            parts.append(_SPACES.sub(" ", node.text_content or ""))
            continue
        if tag in ("td", "th"):
            parts.append(" | ")
        if tag in BLOCKS and not (parts and parts[-1] == "- "):
            parts.append("\n")
        if tag in HEADINGS:
            parts.append(HEADINGS[tag] + " ")
        elif tag == "li":
            parts.append("- ")
        stack.append((node, False))
        children = list(node.iter(include_text=True))
        stack.extend((child, True) for child in reversed(children))
    lines = (line.strip() for line in "".join(parts).split("\n"))
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()
