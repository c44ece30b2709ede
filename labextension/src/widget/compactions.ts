// Compactions: a timeline of what each archived and what its summary left out; opening one
// shows its summary (and the terms it dropped) beside the archived transcript, which the
// message list shows.
import { archivedLine, compactionLine, droppedSection } from "../views/compactions";
import { el } from "../views/dom";
import { label } from "../views/vocabulary";
import type { Context } from "./model";
import { contentOf } from "./text";

function timelineNodes() {
  const timeline = el("section", "timeline", undefined, { "data-testid": "timeline", "aria-label": "Compactions" });
  const timelineTitle = el("div", "timeline-title");
  const timelineList = el("ol", "timeline-list", undefined, { "data-testid": "compactions" });
  timeline.append(timelineTitle, timelineList);
  return { timeline, timelineTitle, timelineList };
}

function summaryNodes() {
  const summaryPane = el("section", "summary-pane", undefined, { "data-testid": "compaction-view", "aria-label": "The compaction's summary" });
  const summaryHead = el("div", "summary-head", undefined, { "data-testid": "compaction-head", tabindex: "-1" });
  const closeCompaction = el("button", "close", label("back"), { type: "button", "data-testid": "close-compaction", "aria-label": "Close this compaction and show the memory" });
  const droppedBox = el("div", "dropped");
  const summaryTitle = el("div", "summary-title", "The summary that replaced it");
  const summaryBody = el("div", "summary-body", undefined, { "data-testid": "summary" });
  summaryPane.append(summaryHead, closeCompaction, droppedBox, summaryTitle, summaryBody);
  return { summaryPane, summaryHead, closeCompaction, droppedBox, summaryTitle, summaryBody };
}

function drawTimeline(s) {
  const { model, timeline, timelineTitle, timelineList } = s;
  const items = model.get("compactions");
  timeline.hidden = model.get("in_ram") || !model.get("exists");
  timelineTitle.textContent = label("compactions");
  if (!items.length) {
    timelineList.replaceChildren(el("li", "empty", label("no compactions")));
    return;
  }
  const open = model.get("open_archive");
  timelineList.replaceChildren(...items.map((c, i) => {
    const text = `${c.time || "?"} · ${compactionLine(c)}`;
    const button = el("button", "compaction", undefined, { type: "button", "data-testid": "compaction", "data-archive": c.archive, "aria-label": `Open compaction ${i + 1}: ${text}`, "aria-pressed": String(open === c.archive) });
    button.append(el("span", "number", `${i + 1}.`), el("span", "", text),
      el("span", "archive-name", c.archive));
    button.onclick = () => openArchive(s, open === c.archive ? "" : c.archive, true);
    const item = el("li");
    item.append(button);
    return item;
  }));
}

// The open compaction's summary beside the list, when the list shows its archive.
function drawCompaction(s, current) {
  const { model, inspect, summaryPane, summaryHead, summaryTitle, droppedBox, summaryBody } = s;
  const info = model.get("compaction");
  const open = current === "archive" && info && info.archive === model.get("open_archive");
  inspect.classList.toggle("split", Boolean(open));
  summaryPane.hidden = !open;
  if (!open) return;
  const all = model.get("compactions");
  const n = all.findIndex((c) => c.archive === info.archive) + 1;
  summaryHead.textContent = `Compaction ${n} of ${all.length} · ${archivedLine(info)}`;
  summaryTitle.textContent = n === all.length ? label("summary now") : label("summary then");
  const find = (term: string) => model.send({ command: "find", term });
  droppedBox.replaceChildren(droppedSection(info, find, "dropped"));
  summaryBody.replaceChildren(contentOf(info.summary, model.get("exact")));
  if (s.focusSummary) {
    s.focusSummary = false;
    summaryHead.focus();
  }
}

function openArchive(s, name, byPerson = false) {
  s.focusSummary = byPerson && Boolean(name);
  s.model.set("open_archive", name);
  s.model.set("archive_page", 0);
  s.model.save_changes();
}

function closeCompactionView(s) {
  const archive = s.model.get("open_archive");
  openArchive(s, "");
  const row = [...s.timelineList.querySelectorAll("button.compaction")].find((b) => b.dataset.archive === archive);
  if (row) row.focus();
}

// The timeline and the summary pane; `inspect` holds the summary pane beside the message list
// (split while a compaction is open). `ctx` is the widget's: {model, widget}.
function compactionsView(ctx: Context, inspect: HTMLElement) {
  // focusSummary: a compaction opened by the person: its summary gets the focus
  const s = { model: ctx.model, inspect, ...timelineNodes(), ...summaryNodes(), focusSummary: false };
  s.closeCompaction.onclick = () => closeCompactionView(s);
  // Escape closes an open compaction (the widget's keys are its own: data-lm-suppress-shortcuts).
  ctx.widget.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || s.summaryPane.hidden) return;
    event.preventDefault();
    event.stopPropagation();
    closeCompactionView(s);
  });
  return {
    timeline: s.timeline,
    summaryPane: s.summaryPane,
    drawTimeline: () => drawTimeline(s),
    draw: (current) => drawCompaction(s, current),
    openArchive: (name) => openArchive(s, name),
  };
}

export { compactionsView };
