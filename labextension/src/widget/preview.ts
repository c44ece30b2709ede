// The widget's frame of the compaction preview (../views/preview.ts): the `compaction_preview`
// trait draws it, its buttons send the kernel commands (preview, measure, compact, cancel).
// Nothing changes until Compact.
import { CompactPreview } from "../views/preview";
import type { Model } from "./model";

function previewView(model: Model) {
  const area = document.createElement("div");
  area.hidden = true;
  let view: CompactPreview | null = null;
  const actions = {
    again: (keep: string[], edit: string | null) =>
      model.send({ command: "preview", keep, ...(edit === null ? {} : { summary: edit }) }),
    measure: (summary: string) => model.send({ command: "measure", summary }),
    compact: (summary: string) => model.send({ command: "compact", summary }),
    cancel: () => model.send({ command: "cancel" }),
  };

  function draw() {
    const shown = model.get("compaction_preview");
    area.hidden = !shown.summary;
    if (!shown.summary) {
      view = null; // the next preview starts afresh
      area.replaceChildren();
      return;
    }
    if (!view) {
      view = new CompactPreview(model.get("name"), model.get("info").messages ?? 0, actions);
      area.replaceChildren(view.node);
    }
    view.show(shown);
  }
  return { area, draw };
}

export { previewView };
