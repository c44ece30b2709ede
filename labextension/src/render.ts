/**
 * Untrusted text (messages, notes, summaries) in the panel: the views' `shownText` (sanitized
 * Markdown, the widget's too, or "Exact text" verbatim in a <pre>) in JupyterLab's classes.
 */
import { shownText } from './views/text';

/** Renders untrusted text into a host element, as sanitized Markdown or as exact text. */
export class TextRenderer {
  async render(body: HTMLElement, text: string, exact: boolean): Promise<void> {
    body.classList.toggle('jp-RenderedMarkdown', !exact);
    body.replaceChildren(
      shownText(text, exact, {
        class: 'jp-nbmemory-exact-text',
        'data-testid': 'nbmemory-exact-text'
      })
    );
  }
}
