/**
 * Untrusted text (messages, notes, summaries) as every view shows it: rendered by the one
 * Markdown renderer (bidirectional controls shown as ⟨U+202E⟩, never applied), or, with "Exact
 * text", verbatim in a <pre> with every invisible character revealed (the switch is for
 * auditing: what the agent will read, injected instructions and all).
 */
import { el } from './dom';
import { renderMarkdown } from './markdown';
import { reveal } from './vocabulary';

/** `text` exact, in a `<pre>` with `exactAttrs` (its class among them), or rendered. */
export function shownText(
  text: string,
  exact: boolean,
  exactAttrs: Record<string, string>
): HTMLPreElement | DocumentFragment {
  return exact ? el('pre', '', reveal(text), exactAttrs) : renderMarkdown(text);
}
