/**
 * Untrusted text (messages, notes, summaries) as Markdown, the one renderer of every view.
 *
 * Message text is untrusted (models, tools, other processes, hand edits). marked (npm `marked`,
 * bundled into the panel and into the widget's module) renders it with raw HTML escaped and shown
 * as text, images never loaded (an image is a link, or its words), and only http(s) and mailto
 * links live. The HTML marked makes is then parsed in an inert <template> and only an allowlist
 * of tags and attributes is kept: whatever gets past the renderer becomes text.
 */
import { Marked, type Tokens } from 'marked';

import { label, phrase, showBidi } from './vocabulary';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;'
};

/** `text` with the characters HTML gives a meaning to escaped. */
export function escapeHtml(text: string): string {
  return String(text).replace(/[&<>"']/g, c => ESCAPES[c]);
}

const LIVE_LINK = /^(?:https?:|mailto:)/i;

/** `href` if it is an http(s) or mailto link, else null. */
function liveUrl(href: string | null | undefined): string | null {
  if (typeof href !== 'string') {
    return null;
  }
  // Browsers ignore control characters and spaces inside a scheme ("java\tscript:").
  const squeezed = href.replace(/[\u0000-\u0020\u007f]+/g, '');
  return LIVE_LINK.test(squeezed) ? squeezed : null;
}

function anchor(href: string, title: string | null | undefined, inner: string): string {
  const attrs = `href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer nofollow"`;
  return `<a ${attrs}${title ? ` title="${escapeHtml(title)}"` : ''}>${inner}</a>`;
}

const markdown = new Marked({
  async: false,
  gfm: true,
  breaks: false,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      // raw HTML, block or inline, is shown as text
      return escapeHtml(text);
    },
    image({ href, title, text }: Tokens.Image): string {
      const words = escapeHtml(text ? phrase('image', { alt: text }) : label('image', 'image'));
      const url = liveUrl(href);
      // never an <img>: nothing is fetched
      return url ? anchor(url, title, words) : words;
    },
    link({ href, title, tokens }: Tokens.Link): string {
      const inner = this.parser.parseInline(tokens);
      const url = liveUrl(href);
      return url ? anchor(url, title, inner) : inner;
    },
    checkbox({ checked }: Tokens.Checkbox): string {
      return checked ? '[x] ' : '[ ] ';
    }
  }
});

/** The tags Markdown makes that are kept, with the attributes each keeps: no image, no style. */
const ALLOWED: Record<string, string[]> = {
  A: ['href', 'title', 'target', 'rel'],
  BLOCKQUOTE: [],
  BR: [],
  CODE: ['class'],
  DEL: [],
  EM: [],
  H1: [],
  H2: [],
  H3: [],
  H4: [],
  H5: [],
  H6: [],
  HR: [],
  LI: [],
  OL: ['start'],
  P: [],
  PRE: [],
  STRONG: [],
  TABLE: [],
  TBODY: [],
  TD: ['align'],
  TH: ['align'],
  THEAD: [],
  TR: [],
  UL: []
};

/** Everything under `node` not on the allowlist made text; links kept only when live. */
function sanitize(node: Node): void {
  for (const child of [...node.childNodes]) {
    if (child.nodeType === Node.TEXT_NODE) {
      continue;
    }
    if (!(child instanceof Element) || !(child.tagName in ALLOWED)) {
      child.replaceWith(document.createTextNode(child.textContent || ''));
      continue;
    }
    for (const attr of [...child.attributes]) {
      if (!ALLOWED[child.tagName].includes(attr.name)) {
        child.removeAttribute(attr.name);
      }
    }
    if (child.tagName === 'A') {
      const url = liveUrl(child.getAttribute('href'));
      if (!url) {
        child.replaceWith(document.createTextNode(child.textContent || ''));
        continue;
      }
      child.setAttribute('target', '_blank');
      child.setAttribute('rel', 'noopener noreferrer nofollow');
    }
    sanitize(child);
  }
}

/**
 * Untrusted Markdown as HTML with raw tags escaped, no images, only http(s)/mailto links, and
 * bidirectional controls shown as ⟨U+202E⟩ rather than let reorder the text around them.
 */
export function markdownHtml(source: string): string {
  return markdown.parse(showBidi(String(source))) as string;
}

/** Untrusted Markdown as a DOM fragment that cannot run or fetch anything. */
export function renderMarkdown(source: string): DocumentFragment {
  // inert: nothing in it runs or loads
  const template = document.createElement('template');
  template.innerHTML = markdownHtml(source);
  sanitize(template.content);
  return template.content;
}
