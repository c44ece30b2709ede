// Untrusted text (messages, notes, summaries) on screen, and marks over it.
//
// Message text is untrusted (models, tools, other processes, hand edits). It is rendered by
// marked 18.2.1 (npm `marked`, lib/marked.esm.js vendored in static/ with its LICENSE;
// widget/es_module.py inlines it with the widget's modules, no build step) configured so that raw HTML is
// escaped and shown as text, images are never loaded (shown as a plain link), and only http(s)
// and mailto links are live. The HTML marked makes is then parsed in an inert <template> and
// only an allowlist of tags and attributes is kept. "Exact text" shows the stored text verbatim.
import { Marked } from "../marked.esm.js";
import { el, phrase, setWords, vocabulary } from "./dom.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const LIVE_LINK = /^(?:https?:|mailto:)/i;
function liveUrl(href) {
  if (typeof href !== "string") return null;
  // Browsers ignore control characters and spaces inside a scheme ("java\tscript:").
  const squeezed = href.replace(/[\u0000-\u0020\u007f]+/g, "");
  return LIVE_LINK.test(squeezed) ? squeezed : null;
}

function anchor(href, title, inner) {
  const attrs = `href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer nofollow"`;
  return `<a ${attrs}${title ? ` title="${escapeHtml(title)}"` : ""}>${inner}</a>`;
}

const markdown = new Marked({
  async: false,
  gfm: true,
  breaks: false,
  renderer: {
    html({ text }) {
      // raw HTML, block or inline, is shown as text
      return escapeHtml(text);
    },
    image({ href, title, text }) {
      const label = escapeHtml(text ? phrase("image", { alt: text }) : vocabulary().labels.image);
      const url = liveUrl(href);
      // never an <img>: nothing is fetched
      return url ? anchor(url, title, label) : label;
    },
    link({ href, title, tokens }) {
      const inner = this.parser.parseInline(tokens);
      const url = liveUrl(href);
      return url ? anchor(url, title, inner) : inner;
    },
    checkbox({ checked }) {
      return checked ? "[x] " : "[ ] ";
    },
  },
});

const ALLOWED = {
  A: ["href", "title", "target", "rel"], BLOCKQUOTE: [], BR: [], CODE: ["class"], DEL: [],
  EM: [], H1: [], H2: [], H3: [], H4: [], H5: [], H6: [], HR: [], LI: [], OL: ["start"], P: [],
  PRE: [], STRONG: [], TABLE: [], TBODY: [], TD: ["align"], TH: ["align"], THEAD: [], TR: [],
  UL: [],
};

function sanitize(node) {
  for (const child of [...node.childNodes]) {
    if (child.nodeType === Node.TEXT_NODE) continue;
    if (child.nodeType !== Node.ELEMENT_NODE || !(child.tagName in ALLOWED)) {
      child.replaceWith(document.createTextNode(child.textContent || ""));
      continue;
    }
    for (const attr of [...child.attributes]) {
      if (!ALLOWED[child.tagName].includes(attr.name)) child.removeAttribute(attr.name);
    }
    if (child.tagName === "A") {
      const url = liveUrl(child.getAttribute("href"));
      if (!url) {
        child.replaceWith(document.createTextNode(child.textContent || ""));
        continue;
      }
      child.setAttribute("target", "_blank");
      child.setAttribute("rel", "noopener noreferrer nofollow");
    }
    sanitize(child);
  }
}

// Untrusted Markdown as HTML with raw tags escaped, no images and only http(s)/mailto links.
function markdownHtml(source) {
  return markdown.parse(String(source));
}

// Untrusted Markdown as a DOM fragment that cannot run or fetch anything.
function renderMarkdown(source) {
  // inert: nothing in it runs or loads
  const template = document.createElement("template");
  template.innerHTML = markdownHtml(source);
  sanitize(template.content);
  return template.content;
}

// what a "u" regular expression lets be escaped
const REGEXP_SPECIAL = /[.*+?^${}()|[\]\\/]/g;

// Wrap each occurrence of `terms` (any case) inside the text nodes of `root` in a <mark> of
// `className`. Only text nodes are split and only elements made here are added: the text
// itself is never parsed as HTML. With `words`, a term matches only where it is not part of a
// longer word or number ("1" does not mark the 1 of "4471"). Returns the number of marks.
function markTerms(root, terms, className, words = false) {
  const wanted = [...new Set(terms.map(String).filter((t) => t.trim()))].sort((a, b) => b.length - a.length);
  if (!wanted.length) return 0;
  const body = wanted.map((t) => t.replace(REGEXP_SPECIAL, "\\$&")).join("|");
  const pattern = new RegExp(words ? `(?<![\\p{L}\\p{N}])(?:${body})(?![\\p{L}\\p{N}])` : body, "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let count = 0;
  for (const node of nodes) {
    const text = node.nodeValue;
    const pieces = [];
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (!match[0]) continue;
      if (match.index > last) pieces.push(document.createTextNode(text.slice(last, match.index)));
      const mark = document.createElement("mark");
      mark.className = className;
      mark.textContent = match[0];
      pieces.push(mark);
      last = match.index + match[0].length;
      count += 1;
    }
    if (!pieces.length) continue;
    if (last < text.length) pieces.push(document.createTextNode(text.slice(last)));
    node.replaceWith(...pieces);
  }
  return count;
}

// The vocabulary (dom.js), and the characters that change how text shows without showing
// themselves (its `invisible`, nbmemory.wording.INVISIBLE: the panel and %memory reveal the
// same ones).
let invisible = null;
function setVocabulary(vocab) {
  setWords(vocab);
  const pattern = vocab.invisible;
  if (pattern && (!invisible || invisible.source !== pattern)) invisible = new RegExp(pattern, "gu");
}

// `text` with each invisible or bidirectional character shown as ⟨U+202E⟩, never applied.
function reveal(text) {
  if (!invisible) return String(text);
  return String(text).replace(invisible, (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

// Untrusted text as shown: verbatim in a <pre> with "Exact text" (invisible characters
// revealed: the switch is for auditing), else rendered Markdown.
function shownText(text, exact, attrs = {}) {
  if (exact) return el("pre", { class: "content exact", ...attrs }, reveal(text));
  const div = el("div", { class: "content" });
  div.append(renderMarkdown(text));
  return div;
}

export { escapeHtml, markdownHtml, markTerms, renderMarkdown, reveal, setVocabulary, shownText };
