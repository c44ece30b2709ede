// The browser side of nbmemory's MemoryWidget: the frame anywidget renders (`render({model, el})`)
// around a module per view: gauge.ts (the figures and the context X-ray), messages.ts (the
// message list), search.ts, compactions.ts (the timeline and an opened compaction's summary),
// notes.ts (the frame of the pinned notes and their review), preview.ts (a compaction to confirm), controls.ts (the display and
// navigation bars) and live.ts (expanded or not; live or a saved view), with text.ts (untrusted
// text) and paging.ts beneath them, and the views' shared modules (../views/) beneath those.
//
// esbuild bundles this file and what it imports into nbmemory/jupyter/static/widget.js (`npm run
// build:widget`, part of the package's build): the one ES module anywidget loads.
import { el, setText } from "../views/dom";
import { escapeHtml, markdownHtml, renderMarkdown } from "../views/markdown";
import { reveal, setVocabulary } from "../views/vocabulary";
import { compactionsView } from "./compactions";
import { controlsView } from "./controls";
import { gaugeView } from "./gauge";
import { liveView } from "./live";
import { messagesView } from "./messages";
import type { Context, Model } from "./model";
import { notesView } from "./notes";
import { mode } from "./paging";
import { previewView } from "./preview";
import { searchView } from "./search";

// The traits each part is drawn from.
const FIGURES = ["name", "exists", "in_ram", "counting", "info", "archives"];
const LISTING = ["page", "page_size", "newest_first", "messages", "query", "search_archives", "search_page",
  "search_total", "search_results", "archives", "open_archive", "archive_page", "archive_total",
  "archive_messages", "exact", "show_tokens", "info", "compaction", "compactions", "listed_total",
  "role", "roles", "search_caption"];
const STATUSES = ["status", "streaming"];
const PINNED = ["notes", "in_ram", "exists", "exact"];
const TIMELINE = ["compactions", "open_archive", "in_ram", "exists"];

async function render({ model, el: root }: { model: Model; el: HTMLElement }) {
  // The words come from the model `vocabulary` refers to ("IPY_MODEL_<id>"), one per kernel.
  setVocabulary((await model.widget_manager.get_model(model.get("vocabulary").slice(10))).get("words"));
  // data-lm-suppress-shortcuts: keys typed here are the widget's, not the notebook's commands.
  const widget = el("div", "nbmemory-widget", undefined, { "data-testid": "nbmemory-widget", "data-lm-suppress-shortcuts": "true" });
  // Lumino looks for that attribute only up to the first element its shortcut's selector
  // matches, and a focused control inside a notebook matches: so whatever takes the focus
  // here carries the attribute too.
  widget.addEventListener("focusin", (event) => {
    (event.target as Element).setAttribute("data-lm-suppress-shortcuts", "true");
  });
  const status = el("div", "status", undefined, { "data-testid": "status", role: "status", "aria-live": "polite" });
  const streaming = el("div", "streaming", undefined, { "data-testid": "streaming", "aria-live": "polite" });
  function drawStatus() {
    setText(status, model.get("status"));
    setText(streaming, model.get("streaming")); // the model's answer as it comes: untrusted
  }
  // What the views share: `live` (a kernel backs this view), and ways to say and redraw things.
  // drawList and drawAll are set below, once every view exists.
  const ctx: Context = {
    model, widget, live: true, say: (text) => { model.set("status", text); drawStatus(); },
    drawList: () => {}, drawAll: () => {},
  };

  const gauge = gaugeView(model);
  const search = searchView(model);
  const messages = messagesView(ctx);
  const inspect = el("div", "inspect");
  const compactions = compactionsView(ctx, inspect);
  inspect.append(compactions.summaryPane, messages.listPane);
  const controls = controlsView(model, compactions.openArchive);
  const notes = notesView(ctx);
  const preview = previewView(model);
  const detailsId = `nbmemory-details-${Math.random().toString(36).slice(2)}`;
  const details = el("div", "details", undefined, { id: detailsId, "data-testid": "details" });
  const live = liveView(ctx, details, gauge.miniGauge);

  // The one-line summary, always shown: the toggle, the name, a small gauge and the counts.
  const head = el("div", "head", undefined, { "data-testid": "summary-line" });
  head.append(live.toggle, gauge.name, gauge.miniGauge, gauge.usage, gauge.brief);
  const bar = el("div", "bar", undefined, { role: "group", "aria-label": "Search and display" });
  bar.append(search.form, controls.roleFilter, controls.exactLabel, controls.perMessageLabel);
  details.append(gauge.xray.node, gauge.counts, gauge.notes, notes.pinned, compactions.timeline, bar, controls.nav,
    preview.area, status, streaming, inspect);
  widget.append(head, live.offline, details);
  root.append(widget);

  function drawFigures() {
    gauge.draw();
    controls.compact.disabled = !model.get("exists");
  }
  function drawList() {
    controls.draw();
    search.draw();
    const current = mode(model);
    messages.draw(current);
    compactions.draw(current);
    messages.showFound(current);
  }
  function drawAll() {
    drawFigures();
    drawList();
    notes.draw();
    compactions.drawTimeline();
    drawStatus();
    preview.draw();
    live.draw();
  }
  ctx.drawList = drawList;
  ctx.drawAll = drawAll;

  function onMessage(content) {
    if (content && ["pin", "unpin", "review", "approval"].includes(content.command)) {
      notes.onAnswer(content);
    } else if (content && content.command === "find") {
      messages.onFind(content);
    } else if (content && content.command === "full") {
      messages.onFull(content);
    }
  }

  const redraw = (traits: string[], draw: () => void) => traits.map((t): [string, () => void] => [t, draw]);
  const handlers = [...redraw(FIGURES, drawFigures), ...redraw(LISTING, drawList), ...redraw(STATUSES, drawStatus),
    ...redraw(PINNED, notes.draw), ...redraw(TIMELINE, compactions.drawTimeline)];
  handlers.push(["compaction_preview", preview.draw]);
  for (const [trait, handler] of handlers) model.on(`change:${trait}`, handler);
  model.on("msg:custom", onMessage);
  model.on("change:expanded", live.draw);
  drawAll();
  live.check();
  return () => {
    model.off("change:expanded", live.draw);
    live.stop();
    for (const [trait, handler] of handlers) model.off(`change:${trait}`, handler);
    model.off("msg:custom", onMessage);
  };
}

export { escapeHtml, markdownHtml, renderMarkdown, reveal };
export default { render };
