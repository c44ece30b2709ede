// Untrusted text (messages, notes, summaries) as the widget shows it: verbatim with "Exact text",
// else rendered by the views' one Markdown renderer.
import { el } from "../views/dom";
import { renderMarkdown } from "../views/markdown";
import { reveal } from "../views/vocabulary";

// Untrusted text as shown: verbatim in a <pre> with "Exact text" (invisible characters
// revealed: the switch is for auditing), else rendered Markdown.
function shownText(text: string, exact: boolean, attrs: Record<string, string> = {}): HTMLElement {
  if (exact) return el("pre", "content exact", reveal(text), { ...attrs });
  const div = el("div", "content");
  div.append(renderMarkdown(text));
  return div;
}

export { shownText };
