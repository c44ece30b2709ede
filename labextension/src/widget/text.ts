// Untrusted text (messages, notes, summaries) as the widget shows it: the views' `shownText`
// (exact, or rendered Markdown) as the widget's `.content`.
import { el } from "../views/dom";
import { shownText } from "../views/text";

// A message's, note's or summary's text: a <pre class="content exact"> (with `attrs`) for
// "Exact text", else the rendered Markdown in a <div class="content">.
function contentOf(text: string, exact: boolean, attrs: Record<string, string> = {}): HTMLElement {
  const shown = shownText(text, exact, { class: "content exact", ...attrs });
  if (shown instanceof HTMLElement) return shown;
  const div = el("div", "content");
  div.append(shown);
  return div;
}

export { contentOf };
