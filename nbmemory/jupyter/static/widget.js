// The browser side of nbmemory's MemoryWidget, put together from a module per view in
// static/widget/: gauge.js (the figures and the context X-ray), messages.js (the message list),
// search.js, compactions.js (the timeline and an opened compaction's summary), notes.js (the
// pinned notes), preview.js (a compaction to confirm), controls.js (the display and navigation
// bars) and live.js (expanded or not; live or a saved view), with dom.js, markdown.js
// (untrusted text) and paging.js beneath them.
//
// They are plain ES modules, with no build step. anywidget loads one module from a string, so
// widget/es_module.py inlines the modules this one imports (and theirs, and the vendored marked) into it;
// for that, a module's imports are `import { a, b } from "./file.js";` lines and its exports one
// `export { ... };` list at its end.
import { compactionsView } from "./widget/compactions.js";
import { controlsView } from "./widget/controls.js";
import { el } from "./widget/dom.js";
import { gaugeView } from "./widget/gauge.js";
import { liveView } from "./widget/live.js";
import { escapeHtml, markdownHtml, markTerms, renderMarkdown, reveal, setVocabulary } from "./widget/markdown.js";
import { messagesView } from "./widget/messages.js";
import { notesView } from "./widget/notes.js";
import { mode } from "./widget/paging.js";
import { previewView } from "./widget/preview.js";
import { searchView } from "./widget/search.js";

// The traits each part is drawn from.
const FIGURES = ["name", "exists", "in_ram", "counting", "info", "archives"];
const LISTING = ["page", "page_size", "newest_first", "messages", "query", "search_archives", "search_page",
  "search_total", "search_results", "archives", "open_archive", "archive_page", "archive_total",
  "archive_messages", "exact", "show_tokens", "info", "compaction", "compactions", "listed_total",
  "role", "roles", "search_caption"];
const STATUSES = ["status", "streaming"];
const PINNED = ["pinned_notes", "note_changes", "notes_tokens", "notes_budget", "in_ram", "exists", "exact"];
const TIMELINE = ["compactions", "open_archive", "in_ram", "exists"];

async function render({ model, el: root }) {
  // The words come from the model `vocabulary` refers to ("IPY_MODEL_<id>"), one per kernel.
  setVocabulary((await model.widget_manager.get_model(model.get("vocabulary").slice(10))).get("words"));
  // data-lm-suppress-shortcuts: keys typed here are the widget's, not the notebook's commands.
  const widget = el("div", {
    class: "nbmemory-widget", "data-testid": "nbmemory-widget", "data-lm-suppress-shortcuts": "true",
  });
  // Lumino looks for that attribute only up to the first element its shortcut's selector
  // matches, and a focused control inside a notebook matches: so whatever takes the focus
  // here carries the attribute too.
  widget.addEventListener("focusin", (event) => {
    event.target.setAttribute("data-lm-suppress-shortcuts", "true");
  });
  const status = el("div", { class: "status", "data-testid": "status", role: "status", "aria-live": "polite" });
  const streaming = el("div", { class: "streaming", "data-testid": "streaming", "aria-live": "polite" });
  function drawStatus() {
    status.textContent = model.get("status");
    streaming.textContent = model.get("streaming");
  }
  // What the views share: `live` (a kernel backs this view), and ways to say and redraw things.
  const ctx = { model, widget, live: true, say: (text) => { model.set("status", text); drawStatus(); } };

  const gauge = gaugeView(model);
  const search = searchView(model);
  const messages = messagesView(ctx);
  const inspect = el("div", { class: "inspect" });
  const compactions = compactionsView(ctx, inspect);
  inspect.append(compactions.summaryPane, messages.listPane);
  const controls = controlsView(model, compactions.openArchive);
  const notes = notesView(ctx);
  const preview = previewView(model);
  const detailsId = `nbmemory-details-${Math.random().toString(36).slice(2)}`;
  const details = el("div", { class: "details", id: detailsId, "data-testid": "details" });
  const live = liveView(ctx, details, gauge.miniGauge);

  // The one-line summary, always shown: the toggle, the name, a small gauge and the counts.
  const head = el("div", { class: "head", "data-testid": "summary-line" });
  head.append(live.toggle, gauge.name, gauge.miniGauge, gauge.usage, gauge.brief);
  const bar = el("div", { class: "bar", role: "group", "aria-label": "Search and display" });
  bar.append(search.search, search.archivesLabel, controls.roleFilter, controls.exactLabel, controls.perMessageLabel);
  details.append(gauge.xray, gauge.counts, gauge.notes, notes.pinned, compactions.timeline, bar, controls.nav,
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
    if (content && ["pin", "unpin", "review"].includes(content.command)) {
      notes.onAnswer(content);
    } else if (content && content.command === "find") {
      messages.onFind(content);
    } else if (content && content.command === "full") {
      messages.onFull(content);
    }
  }

  const handlers = [...FIGURES.map((t) => [t, drawFigures]), ...LISTING.map((t) => [t, drawList]),
    ...STATUSES.map((t) => [t, drawStatus]), ...PINNED.map((t) => [t, notes.draw]),
    ...TIMELINE.map((t) => [t, compactions.drawTimeline])];
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

export { escapeHtml, markdownHtml, markTerms, renderMarkdown, reveal };
export default { render };
