// The compaction the Compact button previews (the `compaction_preview` trait): the model's
// summary to edit, the tokens before and after, and the terms it would drop, each with a box
// to keep it ("Preview again" asks for a summary that keeps the ticked ones). Nothing changes
// until Compact; Cancel drops it. The summary and the terms are untrusted: put in as text.
import { el } from "../views/dom";
import { number } from "../views/format";
import { showBidi, unshowBidi } from "../views/vocabulary";

const SHOWN_TERMS = 60;

function previewView(model) {
  const area = el("section", "compact-preview", undefined, { "data-testid": "compact-preview", "aria-label": "Compaction preview" });
  const tokens = el("p", "", undefined, { "data-testid": "preview-tokens" });
  const summary = el("textarea", "", undefined, { rows: "6", "data-testid": "preview-summary", "aria-label": "Summary to write (you may edit it)" });
  const terms = el("div", "preview-terms", undefined, { "data-testid": "preview-dropped", role: "group", "aria-label": "Terms it would drop: tick to keep" });
  const button = (id, text, command) => {
    const b = el("button", "", text, { type: "button", "data-testid": id });
    b.onclick = () => model.send(command());
    return b;
  };
  const kept = () => [...terms.querySelectorAll<HTMLInputElement>("input:checked")].map((box) => box.value);
  const buttons = el("div", "bar");
  buttons.append(button("preview-again", "Preview again", () => ({ command: "preview", keep: kept() })),
    button("confirm-compact", "Compact", () => ({ command: "compact", summary: unshowBidi(summary.value) })),
    button("cancel-compact", "Cancel", () => ({ command: "cancel" })));
  area.append(tokens, summary, terms, buttons);

  function draw() {
    const shown = model.get("compaction_preview");
    area.hidden = !shown.summary;
    if (!shown.summary) return;
    tokens.textContent = `Nothing has changed yet: ${shown.words}. The summary it would write:`;
    summary.value = showBidi(shown.summary); // no control reorders it while it is edited
    const all = [...shown.keep, ...shown.missing.filter((t) => !shown.keep.includes(t))];
    terms.replaceChildren(el("span", "", all.length ? "It would drop (the archive keeps them); tick to keep: " : "It drops no term."),
      ...all.slice(0, SHOWN_TERMS).map((term) => {
        const label = el("label", "", ` ${term}`, { "data-testid": "preview-term" });
        const box = el("input", "", undefined, { type: "checkbox", value: term });
        box.checked = shown.keep.includes(term);
        label.prepend(box);
        return label;
      }));
    if (all.length > SHOWN_TERMS) terms.append(el("span", "", ` and ${number(all.length - SHOWN_TERMS)} more`));
  }
  return { area, draw };
}

export { previewView };
