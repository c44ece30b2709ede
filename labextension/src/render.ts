/**
 * Untrusted text (messages, notes, summaries) in the panel: the views' one Markdown renderer
 * (raw HTML shown as text, no images, only http(s) and mailto links; the widget's too), or, in
 * "Exact text" mode, verbatim in a <pre>.
 */
import { el } from './views/dom';
import { renderMarkdown } from './views/markdown';
import { reveal } from './views/vocabulary';

/** Renders untrusted text into a host element, as sanitized Markdown or as exact text. */
export class TextRenderer {
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
    body.replaceChildren(renderMarkdown(text));
  }
}
