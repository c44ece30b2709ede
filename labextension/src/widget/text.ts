// Untrusted text (messages, notes, summaries) as the widget shows it: verbatim with "Exact text",
// else rendered by the views' one Markdown renderer; and marks over it.
import { el } from "../views/dom";
import { renderMarkdown } from "../views/markdown";
import { reveal } from "../views/vocabulary";

// what a "u" regular expression lets be escaped
const REGEXP_SPECIAL = /[.*+?^${}()|[\]\\/]/g;

// Wrap each occurrence of `terms` (any case) inside the text nodes of `root` in a <mark> of
// `className`. Only text nodes are split and only elements made here are added: the text
// itself is never parsed as HTML. With `words`, a term matches only where it is not part of a
// longer word or number ("1" does not mark the 1 of "4471"). Returns the number of marks.
function markTerms(root: Node, terms: unknown[], className: string, words = false): number {
  const wanted = [...new Set(terms.map(String).filter((t) => t.trim()))].sort((a, b) => b.length - a.length);
  if (!wanted.length) return 0;
  const body = wanted.map((t) => t.replace(REGEXP_SPECIAL, "\\$&")).join("|");
  const pattern = new RegExp(words ? `(?<![\\p{L}\\p{N}])(?:${body})(?![\\p{L}\\p{N}])` : body, "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  while (walker.nextNode()) nodes.push(walker.currentNode as Text);
  let count = 0;
  for (const node of nodes) {
    const text = node.data;
    const pieces: Node[] = [];
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

// Untrusted text as shown: verbatim in a <pre> with "Exact text" (invisible characters
// revealed: the switch is for auditing), else rendered Markdown.
function shownText(text: string, exact: boolean, attrs: Record<string, string> = {}): HTMLElement {
  if (exact) return el("pre", "content exact", reveal(text), { ...attrs });
  const div = el("div", "content");
  div.append(renderMarkdown(text));
  return div;
}

export { markTerms, shownText };
