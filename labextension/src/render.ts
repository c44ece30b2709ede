/**
 * Untrusted text (messages, notes, summaries) on screen: Markdown with raw HTML escaped and no
 * images (an image is a link, as in the widget), through JupyterLab's sanitizer, or, in "Exact
 * text" mode, verbatim in a <pre>.
 */
import { renderMarkdown } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { el } from './dom';
import { label, phrase, reveal } from './vocabulary';

/** Tags Markdown produces, minus <img>; any other tag in a message (raw HTML) is shown as text. */
const MARKDOWN_TAGS = [
  'a', 'b', 'blockquote', 'br', 'code', 'del', 'div', 'em', 'h1', 'h2', 'h3', 'h4', 'h5',
  'h6', 'hr', 'i', 'li', 'ol', 'p', 'pre', 's', 'span', 'strong', 'sub', 'sup', 'table',
  'tbody', 'td', 'th', 'thead', 'tr', 'ul'
];

/**
 * Tags never rendered: when a message holds one, it is escaped and shown with all its
 * attributes (`<img src=x onerror=...>` as text), so a reader sees what the payload was.
 */
const SHOWN_AS_TEXT = [
  'audio', 'base', 'body', 'button', 'details', 'embed', 'form', 'frame', 'frameset', 'head',
  'html', 'iframe', 'img', 'input', 'link', 'marquee', 'math', 'meta', 'object', 'picture',
  'script', 'select', 'source', 'style', 'svg', 'template', 'textarea', 'track', 'video'
];
/** Attributes kept on rendered tags: no styles (no `url()` fetches), no handlers. */
const RENDERED_ATTRIBUTES: Record<string, string[]> = {
  a: ['href', 'title'],
  ol: ['start'],
  td: ['align'],
  th: ['align']
};

/**
 * The app's sanitizer, restricted to the tags Markdown produces, without images or styles:
 * raw HTML in a message (`<img onerror=...>`, `<script>`, `<svg onload=...>`) is escaped and
 * shown as text (with its attributes), never rendered; a Markdown image is a link by then
 * (`rawHtmlAsText`) and an `<img>` would be escaped too, so no tracker is fetched; no style
 * attribute survives (no CSS `url()` fetch); links keep only http(s) and mailto targets (a
 * `javascript:` link loses its href).
 */
export class MessageSanitizer implements IRenderMime.ISanitizer {
  constructor(private readonly base: IRenderMime.ISanitizer) {}

  sanitize(dirty: string, options?: IRenderMime.ISanitizerOptions): string {
    const strict = {
      allowedTags: MARKDOWN_TAGS,
      disallowedTagsMode: 'escape',
      allowedAttributes: {
        ...Object.fromEntries(SHOWN_AS_TEXT.map(tag => [tag, ['*']])),
        ...RENDERED_ATTRIBUTES
      },
      allowedStyles: {},
      allowedSchemes: ['http', 'https', 'mailto'],
      allowedSchemesByTag: {}
    };
    return this.base.sanitize(dirty, { ...options, ...strict } as IRenderMime.ISanitizerOptions);
  }

  getAutolink(): boolean {
    return this.base.getAutolink?.() ?? true;
  }

  get allowNamedProperties(): boolean {
    return false;
  }
}

/** `<` where it would open a tag or a comment (not an autolink such as `<https://…>`). */
const TAG_START = /<(?=[A-Za-z/!?])(?!(?:https?|mailto):)/g;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const INDENTED_CODE = /^(?: {4}|\t)/;
/** The start of a Markdown image, `![alt](` or `![alt][`: its alt text is group 1. */
const IMAGE = /!\[([^\]\n]*)\](?=[([])/g;

/** An image's link text, as the widget words it: "image: alt", or "image". */
const imageText = (alt: string): string =>
  `[${alt ? phrase('image', { alt }) : label('image', 'image')}]`;

/**
 * One line of prose with `<` of a raw tag as `&lt;` and each image a link (nothing is fetched;
 * the widget shows an image so too), leaving its code spans as they are.
 */
function escapeLine(line: string): string {
  return line
    .split(/(`+[^`]*?`+)/)
    .map((piece, i) =>
      i % 2
        ? piece
        : piece.replace(TAG_START, '&lt;').replace(IMAGE, (_, alt: string) => imageText(alt))
    )
    .join('');
}

/**
 * Markdown source whose raw HTML is text: each `<` that would open a tag becomes `&lt;`
 * outside code, so `<b>` shows as written (as in the widget) and the sanitizer never has to
 * escape a tag itself (which rewrites it: quoted attributes, an invented `</p>`); and whose
 * images are links ("image: alt"), as in the widget.
 */
export function rawHtmlAsText(source: string): string {
  let fence: string | null = null;
  let previousBlank = true;
  let inIndented = false;
  return source
    .split('\n')
    .map(line => {
      const opened = FENCE.exec(line);
      if (fence !== null) {
        if (opened && opened[1][0] === fence[0] && opened[1].length >= fence.length) {
          fence = null;
        }
        return line;
      }
      if (opened) {
        fence = opened[1];
        return line;
      }
      const blank = !line.trim();
      inIndented = INDENTED_CODE.test(line) && (previousBlank || inIndented) && !blank;
      previousBlank = blank;
      return inIndented ? line : escapeLine(line);
    })
    .join('\n');
}

/** Renders untrusted text into a host element, as sanitized Markdown or as exact text. */
export class TextRenderer {
  constructor(
    readonly sanitizer: IRenderMime.ISanitizer,
    readonly markdownParser: IRenderMime.IMarkdownParser | null
  ) {}

  async render(body: HTMLElement, text: string, exact: boolean): Promise<void> {
    if (exact) {
      body.classList.remove('jp-RenderedMarkdown');
      const pre = el('pre', 'jp-nbmemory-exact-text', undefined, {
        'data-testid': 'nbmemory-exact-text'
      });
      // Verbatim: what the agent will read, injected instructions and all, with invisible and
      // bidirectional characters revealed (the switch is for auditing).
      pre.textContent = reveal(text);
      body.replaceChildren(pre);
      return;
    }
    body.classList.add('jp-RenderedMarkdown');
    await renderMarkdown({
      host: body,
      source: rawHtmlAsText(text),
      trusted: false,
      sanitizer: this.sanitizer,
      resolver: null,
      linkHandler: null,
      shouldTypeset: false,
      latexTypesetter: null,
      markdownParser: this.markdownParser
    });
  }
}
