// Compactions in the widget: the views' timeline and opened compaction's head, fed by the
// traits (`compactions`, `open_archive`, `compaction`). Opening a compaction shows its head
// beside the archived transcript, which the message list shows; Back or Escape closes it.
import { CompactionHead, backOnEscape } from "../views/compactionHead";
import { el } from "../views/dom";
import { CompactionTimeline } from "../views/timeline";
import type { Context } from "./model";
import { contentOf } from "./text";

// Show archive `name` in the message list ("" for the memory); opened by the person, its head
// gets the focus once drawn.
function openArchive(s, name: string, byPerson = false) {
  s.focusHead = byPerson && Boolean(name);
  s.model.set("open_archive", name);
  s.model.set("archive_page", 0);
  s.model.save_changes();
}

function closeCompaction(s) {
  const archive = s.model.get("open_archive");
  openArchive(s, "");
  s.timeline.focusRow(archive);
}

function drawTimeline(s) {
  const { model, timeline } = s;
  timeline.node.hidden = model.get("in_ram") || !model.get("exists");
  timeline.update(model.get("name"), model.get("compactions"), model.get("open_archive") || null);
}

// The open compaction's head beside the list, when the list shows its archive.
function drawCompaction(s, current) {
  const { model, inspect, summaryPane, head } = s;
  const info = model.get("compaction");
  const open = current === "archive" && info && info.archive === model.get("open_archive");
  inspect.classList.toggle("split", Boolean(open));
  summaryPane.hidden = !open;
  if (!open) return;
  const all = model.get("compactions");
  void head.show(info, all.findIndex((c) => c.archive === info.archive), all.length);
  if (s.focusHead) {
    s.focusHead = false;
    head.focus();
  }
}

// The timeline and the summary pane; `inspect` holds the summary pane beside the message list
// (split while a compaction is open). `ctx` is the widget's: {model, widget}.
function compactionsView(ctx: Context, inspect: HTMLElement) {
  const { model } = ctx;
  const summaryPane = el("section", "summary-pane", undefined, { "data-testid": "compaction-view" });
  const timeline = new CompactionTimeline({
    open: (compaction) => {
      if (compaction.archive === model.get("open_archive")) head.focus();
      else openArchive(s, compaction.archive, true);
    },
  });
  const head = new CompactionHead({
    render: (body, text) => body.replaceChildren(contentOf(text, model.get("exact"))),
    find: (term) => model.send({ command: "find", term }),
    back: () => closeCompaction(s),
  }, "dropped");
  // focusHead: a compaction opened by the person: its head gets the focus
  const s = { model, inspect, summaryPane, timeline, head, focusHead: false };
  summaryPane.append(s.head.node);
  // The widget's keys are its own (data-lm-suppress-shortcuts): Escape closes an open compaction.
  backOnEscape(ctx.widget, () => !summaryPane.hidden, () => closeCompaction(s));
  return {
    timeline: s.timeline.node,
    summaryPane,
    drawTimeline: () => drawTimeline(s),
    draw: (current) => drawCompaction(s, current),
    openArchive: (name: string) => openArchive(s, name),
  };
}

export { compactionsView };
