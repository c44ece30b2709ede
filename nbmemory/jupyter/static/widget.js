// The browser side of nbmemory's MemoryWidget.
//
// Message text is untrusted (models, tools, other processes, hand edits). It is rendered by
// marked 18.2.1 (npm `marked`, lib/marked.esm.js vendored beside this file with its LICENSE;
// widget.py inlines it into this module, no build step) configured so that raw HTML is escaped
// and shown as text, images are never loaded (shown as a plain link), and only http(s) and
// mailto links are live. The HTML marked makes is then parsed in an inert <template> and only
// an allowlist of tags and attributes is kept. "Exact text" shows the stored text verbatim.
import { Marked } from "./marked.esm.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const LIVE_LINK = /^(?:https?:|mailto:)/i;
function liveUrl(href) {
  if (typeof href !== "string") return null;
  // Browsers ignore control characters and spaces inside a scheme ("java\tscript:").
  const squeezed = href.replace(/[\u0000-\u0020\u007f]+/g, "");
  return LIVE_LINK.test(squeezed) ? squeezed : null;
}

function anchor(href, title, inner) {
  const attrs = `href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer nofollow"`;
  return `<a ${attrs}${title ? ` title="${escapeHtml(title)}"` : ""}>${inner}</a>`;
}

const markdown = new Marked({
  async: false,
  gfm: true,
  breaks: false,
  renderer: {
    html({ text }) {
      return escapeHtml(text); // raw HTML, block or inline, is shown as text
    },
    image({ href, title, text }) {
      const label = escapeHtml(text ? `image: ${text}` : "image");
      const url = liveUrl(href);
      return url ? anchor(url, title, label) : label; // never an <img>: nothing is fetched
    },
    link({ href, title, tokens }) {
      const inner = this.parser.parseInline(tokens);
      const url = liveUrl(href);
      return url ? anchor(url, title, inner) : inner;
    },
    checkbox({ checked }) {
      return checked ? "[x] " : "[ ] ";
    },
  },
});

const ALLOWED = {
  A: ["href", "title", "target", "rel"], BLOCKQUOTE: [], BR: [], CODE: ["class"], DEL: [],
  EM: [], H1: [], H2: [], H3: [], H4: [], H5: [], H6: [], HR: [], LI: [], OL: ["start"], P: [],
  PRE: [], STRONG: [], TABLE: [], TBODY: [], TD: ["align"], TH: ["align"], THEAD: [], TR: [],
  UL: [],
};

function sanitize(node) {
  for (const child of [...node.childNodes]) {
    if (child.nodeType === Node.TEXT_NODE) continue;
    if (child.nodeType !== Node.ELEMENT_NODE || !(child.tagName in ALLOWED)) {
      child.replaceWith(document.createTextNode(child.textContent || ""));
      continue;
    }
    for (const attr of [...child.attributes]) {
      if (!ALLOWED[child.tagName].includes(attr.name)) child.removeAttribute(attr.name);
    }
    if (child.tagName === "A") {
      const url = liveUrl(child.getAttribute("href"));
      if (!url) {
        child.replaceWith(document.createTextNode(child.textContent || ""));
        continue;
      }
      child.setAttribute("target", "_blank");
      child.setAttribute("rel", "noopener noreferrer nofollow");
    }
    sanitize(child);
  }
}

// Untrusted Markdown as HTML with raw tags escaped, no images and only http(s)/mailto links.
export function markdownHtml(source) {
  return markdown.parse(String(source));
}

// Untrusted Markdown as a DOM fragment that cannot run or fetch anything.
export function renderMarkdown(source) {
  const template = document.createElement("template"); // inert: nothing in it runs or loads
  template.innerHTML = markdownHtml(source);
  sanitize(template.content);
  return template.content;
}

const REGEXP_SPECIAL = /[.*+?^${}()|[\]\\/]/g; // what a "u" regular expression lets be escaped

// Wrap each occurrence of `terms` (any case) inside the text nodes of `root` in a <mark> of
// `className`. Only text nodes are split and only elements made here are added: the text
// itself is never parsed as HTML. With `words`, a term matches only where it is not part of a
// longer word or number ("1" does not mark the 1 of "4471"). Returns the number of marks.
export function markTerms(root, terms, className, words = false) {
  const wanted = [...new Set(terms.map(String).filter((t) => t.trim()))].sort((a, b) => b.length - a.length);
  if (!wanted.length) return 0;
  const body = wanted.map((t) => t.replace(REGEXP_SPECIAL, "\\$&")).join("|");
  const pattern = new RegExp(words ? `(?<![\\p{L}\\p{N}])(?:${body})(?![\\p{L}\\p{N}])` : body, "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  let count = 0;
  for (const node of nodes) {
    const text = node.nodeValue;
    const pieces = [];
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (!match[0]) continue;
      if (match.index > last) pieces.push(document.createTextNode(text.slice(last, match.index)));
      const mark = document.createElement("mark");
      mark.className = className;
      mark.textContent = match[0];
      pieces.push(mark);
      last = match.index + match[0].length;
      count += 1;
    }
    if (!pieces.length) continue;
    if (last < text.length) pieces.push(document.createTextNode(text.slice(last)));
    node.replaceWith(...pieces);
  }
  return count;
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

const number = (n) => Number(n).toLocaleString("en");
function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function render({ model, el: root }) {
  // data-lm-suppress-shortcuts: keys typed here are the widget's, not the notebook's commands.
  const widget = el("div", {
    class: "nbmemory-widget", "data-testid": "nbmemory-widget", "data-lm-suppress-shortcuts": "true",
  });
  // The one-line summary, always shown: the toggle, the name, a small gauge and the counts.
  const detailsId = `nbmemory-details-${Math.random().toString(36).slice(2)}`;
  const head = el("div", { class: "head", "data-testid": "summary-line" });
  const toggle = el("button", {
    type: "button", class: "toggle", "data-testid": "toggle", "aria-controls": detailsId,
  });
  const name = el("span", { class: "name", "data-testid": "name" });
  const miniGauge = el("div", { class: "gauge mini", "data-testid": "mini-gauge", "aria-hidden": "true" });
  const miniSegments = el("div", { class: "segments" });
  const miniMark = el("div", { class: "threshold" });
  miniGauge.append(miniSegments, miniMark);
  const usage = el("span", { class: "usage", "data-testid": "usage" });
  const brief = el("span", { class: "brief", "data-testid": "brief" });
  head.append(toggle, name, miniGauge, usage, brief);
  const offline = el("div", { class: "offline", "data-testid": "offline", role: "status" });
  const details = el("div", { class: "details", id: detailsId, "data-testid": "details" });
  // Context X-ray: what the next request carries, part by part, against the window.
  const xray = el("section", { class: "xray", "data-testid": "xray", "aria-label": "Context X-ray" });
  const gauge = el("div", {
    class: "gauge", "data-testid": "gauge", role: "meter", "aria-label": "Context window used",
    "aria-valuemin": "0", "aria-valuemax": "100",
  });
  const segments = el("div", { class: "segments" });
  const mark = el("div", { class: "threshold", "data-testid": "threshold" });
  gauge.append(segments, mark);
  const compactsNext = el("div", { class: "compacts-next", "data-testid": "compacts-next", role: "status" });
  const legend = el("ul", { class: "legend", "data-testid": "legend", "aria-label": "What the next request carries" });
  xray.append(gauge, compactsNext, legend);
  const counts = el("div", { class: "counts", "data-testid": "counts" });
  const notes = el("div", { class: "notes", "data-testid": "notes" });

  const bar = el("div", { class: "bar", role: "group", "aria-label": "Search and display" });
  const search = el("input", {
    type: "search", placeholder: "Search memory", "data-testid": "search", "aria-label": "Search memory",
  });
  const inArchives = el("input", {
    type: "checkbox", "data-testid": "search-archives", "aria-label": "Search the archives too",
  });
  const archivesLabel = el("label", {}, " archives too");
  archivesLabel.prepend(inArchives);
  const exact = el("input", {
    type: "checkbox", "data-testid": "exact", "aria-label": "Show the exact stored text",
  });
  const exactLabel = el("label", {}, " Exact text");
  exactLabel.prepend(exact);
  const perMessage = el("input", {
    type: "checkbox", "data-testid": "show-tokens", "aria-label": "Show the tokens of each message",
  });
  const perMessageLabel = el("label", {}, " Tokens per message");
  perMessageLabel.prepend(perMessage);
  const order = el("button", { type: "button", "data-testid": "order" });
  const roleFilter = el("select", { "data-testid": "role", "aria-label": "Show the messages of one role" });
  const first = el("button", { type: "button", "data-testid": "first", "aria-label": "First page" }, "«");
  const prev = el("button", { type: "button", "data-testid": "previous", "aria-label": "Previous page" }, "‹");
  const pageText = el("span", { "data-testid": "page", "aria-live": "polite" });
  const next = el("button", { type: "button", "data-testid": "next", "aria-label": "Next page" }, "›");
  const last = el("button", { type: "button", "data-testid": "last", "aria-label": "Last page" }, "»");
  const pageInput = el("input", {
    type: "number", min: "1", step: "1", inputmode: "numeric", class: "page-input", "data-testid": "page-input",
    "aria-label": "Go to page", placeholder: "page…",
  });
  const archives = el("select", { "data-testid": "archives", "aria-label": "Open an archive" });
  const compact = el("button", {
    type: "button", "data-testid": "compact", "aria-label": "Compact this memory now",
  }, "Compact");
  bar.append(search, archivesLabel, roleFilter, exactLabel, perMessageLabel);
  const nav = el("div", { class: "bar", role: "group", "aria-label": "Pages, archives and compaction" });
  nav.append(order, first, prev, pageText, next, last, pageInput, archives, compact);

  const status = el("div", { class: "status", "data-testid": "status", role: "status", "aria-live": "polite" });
  const streaming = el("div", { class: "streaming", "data-testid": "streaming", "aria-live": "polite" });
  const heading = el("div", { class: "listing", "data-testid": "listing" });
  const list = el("div", { "data-testid": "messages", role: "list" });

  // Compactions: a timeline; opening one shows its summary beside the archived transcript.
  const timeline = el("section", { class: "timeline", "data-testid": "timeline", "aria-label": "Compactions" });
  const timelineTitle = el("div", { class: "timeline-title" });
  const timelineList = el("ol", { class: "timeline-list", "data-testid": "compactions" });
  timeline.append(timelineTitle, timelineList);
  const summaryPane = el("section", {
    class: "summary-pane", "data-testid": "compaction-view", "aria-label": "The compaction's summary",
  });
  const summaryHead = el("div", { class: "summary-head", "data-testid": "compaction-head", tabindex: "-1" });
  const closeCompaction = el("button", {
    type: "button", class: "close", "data-testid": "close-compaction", "aria-label": "Close this compaction and show the memory",
  }, "Back to the memory");
  const droppedBox = el("div", { class: "dropped", "data-testid": "dropped" });
  const summaryTitle = el("div", { class: "summary-title" }, "The summary that replaced it");
  const summaryBody = el("div", { class: "summary-body", "data-testid": "summary" });
  summaryPane.append(summaryHead, closeCompaction, droppedBox, summaryTitle, summaryBody);
  const listPane = el("div", { class: "list-pane" });
  listPane.append(heading, list);
  const inspect = el("div", { class: "inspect" });
  inspect.append(summaryPane, listPane);

  // Pinned notes: NOTES.md, carried by every request and never compacted.
  const pinned = el("section", { class: "pinned", "data-testid": "pinned", "aria-label": "Pinned notes" });
  const pinnedTitle = el("div", { class: "pinned-title", "data-testid": "pinned-title" });
  const pinnedList = el("ol", { class: "pinned-list", "data-testid": "pinned-notes" });
  const pinnedInfo = el("div", { class: "pinned-info", "data-testid": "pinned-info" });
  const pinForm = el("form", { class: "pin-form", "data-lm-suppress-shortcuts": "true" });
  const pinInput = el("input", {
    type: "text", placeholder: "A note to pin (kept in every request)", "data-testid": "pin-input",
    "aria-label": "Note to pin",
  });
  const pinButton = el("button", { type: "submit", "data-testid": "pin", "aria-label": "Pin this note" }, "Pin");
  pinForm.append(pinInput, pinButton);
  pinned.append(pinnedTitle, pinnedInfo, pinnedList, pinForm);

  details.append(xray, counts, notes, pinned, timeline, bar, nav, status, streaming, inspect);
  widget.append(head, offline, details);
  root.append(widget);

  const whole = new Map(); // "source:index" -> full text fetched from Python

  function mode() {
    if (model.get("query").trim()) return "search";
    return model.get("open_archive") ? "archive" : "memory";
  }
  const PAGER = {
    memory: ["page", "listed_total"],
    archive: ["archive_page", "archive_total"],
    search: ["search_page", "search_total"],
  };
  function pages() {
    const [pageTrait, totalTrait] = PAGER[mode()];
    const size = model.get("page_size") || 1;
    return { trait: pageTrait, page: model.get(pageTrait), count: Math.max(1, Math.ceil(model.get(totalTrait) / size)) };
  }
  function goTo(page) {
    const { trait, count } = pages();
    model.set(trait, Math.min(Math.max(0, page), count - 1));
    model.save_changes();
  }

  function contentNode(item) {
    const key = `${item.source}:${item.index}`;
    const text = whole.has(key) ? whole.get(key) : item.text;
    if (model.get("exact")) {
      const pre = el("pre", { class: "content exact", "data-testid": "exact-text" });
      pre.textContent = text;
      return pre;
    }
    const div = el("div", { class: "content" });
    div.append(renderMarkdown(text));
    return div;
  }

  function messageNode(item) {
    const node = el("div", {
      class: "message", "data-testid": "message", role: "listitem", tabindex: "-1",
      "data-index": String(item.index), "data-source": item.source,
    });
    const meta = el("div", { class: "meta" });
    meta.append(
      el("span", { class: "role" }, item.role),
      el("span", { class: "time" }, item.timestamp),
      el("span", { class: "source" }, `${item.source} #${item.index + 1}`),
    );
    if (item.tokens !== undefined) {
      meta.insertBefore(
        el("span", { class: "tokens", "data-testid": "message-tokens", "data-tokens": String(item.tokens) },
          `${number(item.tokens)} tokens`),
        meta.lastChild,
      );
    }
    const content = contentNode(item);
    const current = mode();
    if (current === "search") {
      markTerms(content, [model.get("query").trim()], "hit");
    } else if (current === "archive") {
      markTerms(content, model.get("compaction").dropped || [], "dropped", true);
    }
    const copy = el("button", {
      type: "button", class: "copy", "data-testid": "copy",
      "aria-label": `Copy message ${item.index + 1} of ${item.source}`,
    }, "Copy");
    copy.onclick = () => copyMessage(item);
    meta.append(copy);
    node.append(meta, content);
    const key = `${item.source}:${item.index}`;
    if (item.folded && !whole.has(key)) {
      const label = `Show full text (${number(item.length)} characters; ${number(item.text.length)} shown)`;
      const more = el("button", { type: "button", class: "more", "data-testid": "full-text", "aria-label": label }, label);
      more.onclick = () => {
        more.disabled = true;
        more.textContent = "Loading the whole message…";
        model.send({ command: "full", index: item.index, source: item.source });
      };
      node.append(more);
    }
    return node;
  }

  // The parts of a request, in the order it carries them (read_model.PARTS), and what each is.
  const PART_HELP = {
    "system prompt": "the agent's instructions",
    "rules": "its rules and custom rules",
    "pinned notes": "NOTES.md, carried by every request, never compacted",
    "earlier sessions": "MEMORY.md as the running agent preloaded it",
    "this session": "what the running agent added since",
    "tool schemas": "the tools it may call",
    "reply room": "tokens kept free for the answer",
  };

  function drawXray(exists, used, win, threshold) {
    const parts = model.get("usage_parts");
    const shown = parts.length ? parts : exists ? [{ name: "memory", tokens: used }] : [];
    const scale = Math.max(win, used, 1); // past the window, the bar is full and in scale
    miniSegments.replaceChildren(...shown.map((part, i) => {
      const segment = el("div", { class: `segment part-${i}` });
      segment.style.width = `${(100 * part.tokens) / scale}%`;
      segment.hidden = !part.tokens;
      return segment;
    }));
    segments.replaceChildren(...shown.map((part, i) => {
      const segment = el("div", {
        class: `segment part-${i}`, "data-testid": "segment", "data-part": part.name,
        "data-tokens": String(part.tokens),
        title: `${part.name}: ${number(part.tokens)} tokens`,
      });
      segment.style.width = `${(100 * part.tokens) / scale}%`;
      segment.hidden = !part.tokens;
      return segment;
    }));
    const items = shown.map((part, i) => {
      const item = el("li", { "data-testid": "legend-item", "data-part": part.name, "data-tokens": String(part.tokens) });
      const help = PART_HELP[part.name];
      item.append(
        el("span", { class: `swatch part-${i}`, "aria-hidden": "true" }),
        el("span", { class: "part-name" }, part.name),
        el("span", { class: "part-tokens" }, `${number(part.tokens)}`),
      );
      if (help) item.title = help;
      return item;
    });
    if (exists && !model.get("counting")) {
      const total = el("li", { class: "legend-total", "data-testid": "legend-total", "data-tokens": String(used) });
      const at = threshold === null ? "no compression" : `compacts at ${number(Math.ceil(threshold * win))} (${Math.round(threshold * 100)}%)`;
      total.append(
        el("span", { class: "part-name" }, "next request"),
        el("span", { class: "part-tokens" }, `${number(used)} of ${number(win)} · ${at}`),
      );
      items.push(total);
    }
    legend.replaceChildren(...items);
    const compacting = exists && !model.get("counting") && model.get("compacts_next");
    gauge.classList.toggle("compacts", compacting);
    miniGauge.classList.toggle("compacts", compacting);
    compactsNext.textContent = compacting
      ? `The next model call will compact this memory first: ${number(used)} tokens reach the `
        + `${Math.round(threshold * 100)}% threshold (${number(Math.ceil(threshold * win))} of ${number(win)}).`
      : "";
  }

  // The static summary shown with this widget (for a notebook opened without its kernel):
  // hidden while this view is there. In JupyterLab and Notebook 7 a style rule of the
  // summary does it too; this is for other front ends.
  function hideStatic() {
    const ref = model.get("model_ref");
    if (!ref) return;
    for (const node of document.querySelectorAll("[data-nbmemory-static]")) {
      if (node.dataset.nbmemoryStatic === ref) node.hidden = true;
    }
  }

  function drawFigures() {
    hideStatic();
    const exists = model.get("exists");
    const used = model.get("tokens_used");
    const win = model.get("context_length") || 1;
    const percent = Math.round((100 * used) / win);
    const threshold = model.get("threshold");
    const modelName = model.get("model_name");
    name.textContent = modelName ? `${model.get("name")} · ${modelName}` : model.get("name");
    if (!exists) {
      usage.textContent = "no agent yet";
    } else if (model.get("counting")) {
      usage.textContent = `counting tokens… / ${number(win)} tokens`;
    } else {
      usage.textContent = `${number(used)} / ${number(win)} tokens (${percent}%)`;
    }
    gauge.setAttribute("data-percent", String(exists ? percent : 0));
    gauge.setAttribute("aria-valuenow", String(exists ? Math.min(100, percent) : 0));
    gauge.setAttribute("aria-valuetext", exists ? usage.textContent : "no agent yet");
    drawXray(exists, used, win, threshold);
    mark.hidden = miniMark.hidden = threshold === null;
    if (threshold !== null) {
      mark.style.left = miniMark.style.left = `calc(${Math.min(100, threshold * 100)}% - 1px)`;
      mark.title = `compression at ${Math.round(threshold * 100)}%`;
    }
    const messageCount = model.get("message_count");
    const archiveCount = model.get("archive_count");
    brief.textContent = !exists ? "" : `${number(messageCount)} ${messageCount === 1 ? "message" : "messages"}`
      + ` · ${number(archiveCount)} ${archiveCount === 1 ? "archive" : "archives"}`
      + (exists && !model.get("counting") && model.get("compacts_next") ? " · the next call compacts" : "");
    if (!exists) {
      counts.textContent = "";
    } else {
      const file = model.get("in_ram") ? "kept in RAM (no MEMORY.md)" : `MEMORY.md ${bytes(model.get("memory_bytes"))}`;
      const lastCompaction = model.get("last_compaction");
      counts.textContent = `${number(model.get("message_count"))} messages · ${number(model.get("archive_count"))} archives · ${file}`
        + (lastCompaction ? ` · last compaction ${lastCompaction}` : "");
    }
    const lines = [];
    if (exists && threshold === null) lines.push("Context compression is off for this agent.");
    if (exists && !model.get("in_ram") && !model.get("settings_recorded")) lines.push("Figures use default settings: this agent has not recorded its model and window yet.");
    for (const problem of model.get("problems")) lines.push(problem);
    notes.textContent = lines.join(" ");
    compact.disabled = !exists;
  }

  function drawControls() {
    const { page, count } = pages();
    pageText.textContent = `page ${page + 1} of ${count}`;
    pageInput.max = String(count);
    if (document.activeElement !== pageInput) pageInput.value = "";
    const newestFirst = model.get("newest_first");
    if (mode() === "search") {
      first.textContent = "« First";
      last.textContent = "Last »";
      first.setAttribute("aria-label", "First page of results");
      last.setAttribute("aria-label", "Last page of results");
    } else {
      first.textContent = newestFirst ? "« Newest" : "« Oldest";
      last.textContent = newestFirst ? "Oldest »" : "Newest »";
      first.setAttribute("aria-label", newestFirst ? "Newest messages (first page)" : "Oldest messages (first page)");
      last.setAttribute("aria-label", newestFirst ? "Oldest messages (last page)" : "Newest messages (last page)");
    }
    const roles = model.get("roles");
    const role = model.get("role");
    const options = role && !roles.includes(role) ? [...roles, role] : roles;
    roleFilter.replaceChildren(
      el("option", { value: "" }, "All roles"),
      ...options.map((r) => el("option", { value: r }, r)),
    );
    roleFilter.value = role;
    prev.disabled = first.disabled = page <= 0;
    next.disabled = last.disabled = page >= count - 1;
    const newest = model.get("newest_first");
    order.textContent = newest ? "Newest first" : "Oldest first";
    order.setAttribute("aria-label", newest ? "Order: newest first (show oldest first)" : "Order: oldest first (show newest first)");
    exact.checked = model.get("exact");
    perMessage.checked = model.get("show_tokens");
    inArchives.checked = model.get("search_archives");
    if (document.activeElement !== search) search.value = model.get("query");
    const names = model.get("archives");
    archives.replaceChildren(
      el("option", { value: "" }, names.length ? "MEMORY.md (open an archive…)" : "No archives"),
      ...names.map((a) => el("option", { value: a.name }, `${a.name} · ${number(a.messages)} messages`)),
    );
    archives.value = model.get("open_archive");
  }

  function drawList() {
    drawControls();
    const current = mode();
    let items;
    if (current === "search") {
      const total = model.get("search_total");
      const query = model.get("query").trim();
      const role = model.get("role");
      const where = (role ? ` among ${role}'s messages` : "")
        + (model.get("search_archives") ? " (archives too)" : " (MEMORY.md only; tick “archives too” to search the archives)");
      heading.textContent = total
        ? `${number(total)} ${total === 1 ? "message matches" : "messages match"} “${query}”${where}`
        : `No results: no message contains “${query}”${where}.`;
      items = model.get("search_results");
    } else if (current === "archive") {
      const role = model.get("role");
      heading.textContent = `Archive ${model.get("open_archive")}: ${number(model.get("archive_total"))} messages`
        + (role ? ` from ${role}` : "");
      items = model.get("archive_messages");
    } else {
      const role = model.get("role");
      heading.textContent = role ? `${number(model.get("listed_total"))} messages from ${role}` : "";
      items = model.get("messages");
    }
    list.replaceChildren(...items.map(messageNode));
    drawCompaction(current);
    if (found && current === "archive") {
      const node = list.querySelector(`[data-index="${found.index}"]`);
      if (node) {
        found = null;
        node.classList.add("found");
        node.scrollIntoView({ block: "nearest" });
        node.focus({ preventScroll: true });
      }
    }
  }

  let found = null; // a dropped term looked for in the archive: {index} once Python answered

  // Copy a message's whole stored text (fetched from Python first when it is folded).
  async function writeClipboard(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (error) {
      const area = el("textarea", { "aria-hidden": "true", class: "copy-buffer" });
      area.value = text;
      widget.append(area);
      area.select();
      let done = false;
      try {
        done = document.execCommand("copy");
      } catch (ignored) {
        done = false;
      }
      area.remove();
      return done;
    }
  }
  async function copyText(label, text) {
    const done = await writeClipboard(text);
    model.set("status", done
      ? `Copied ${label} (${number(text.length)} characters).`
      : `Could not copy ${label}: this browser refused the clipboard.`);
    drawStatus();
  }
  const copying = new Set(); // "source:index" of folded messages being fetched to copy
  function copyMessage(item) {
    const key = `${item.source}:${item.index}`;
    const label = `message ${item.index + 1} of ${item.source}`;
    if (whole.has(key) || !item.folded) {
      copyText(label, whole.has(key) ? whole.get(key) : item.text);
      return;
    }
    if (!live) { // the whole text is the kernel's to give
      copyText(`the first ${number(item.text.length)} characters of ${label} (no kernel for the rest)`, item.text);
      return;
    }
    copying.add(key);
    model.send({ command: "full", index: item.index, source: item.source });
  }

  function drawTimeline() {
    const items = model.get("compactions");
    timeline.hidden = model.get("in_ram") || !model.get("exists");
    timelineTitle.textContent = items.length
      ? `Compactions (${number(items.length)}): what each archived, and what its summary left out`
      : "Compactions";
    if (!items.length) {
      timelineList.replaceChildren(el("li", { class: "empty" }, "No compactions yet."));
      return;
    }
    const open = model.get("open_archive");
    timelineList.replaceChildren(...items.map((c, i) => {
      const dropped = c.dropped.length;
      const text = `${c.time || "?"} · ${number(c.tokens_before)} → ${number(c.tokens_after)} tokens · `
        + `${number(c.messages)} messages archived · ${number(dropped)} ${dropped === 1 ? "term" : "terms"} dropped`;
      const button = el("button", {
        type: "button", class: "compaction", "data-testid": "compaction", "data-archive": c.archive,
        "aria-label": `Open compaction ${i + 1}: ${text}`, "aria-pressed": String(open === c.archive),
      });
      button.append(el("span", { class: "number" }, `${i + 1}.`), el("span", {}, text),
        el("span", { class: "archive-name" }, c.archive));
      button.onclick = () => openArchive(open === c.archive ? "" : c.archive, true);
      const item = el("li");
      item.append(button);
      return item;
    }));
  }

  function drawCompaction(current) {
    const info = model.get("compaction");
    const open = current === "archive" && info && info.archive === model.get("open_archive");
    inspect.classList.toggle("split", Boolean(open));
    summaryPane.hidden = !open;
    if (!open) return;
    const all = model.get("compactions");
    const n = all.findIndex((c) => c.archive === info.archive) + 1;
    const kept = info.kept_messages ? `, ${number(info.kept_messages)} kept word for word` : "";
    summaryHead.textContent = `Compaction ${n} of ${all.length} · ${info.time || "?"} · `
      + `${number(info.tokens_before)} → ${number(info.tokens_after)} tokens · `
      + `${number(info.messages)} messages archived to ${info.archive}${kept}`
      + (info.recorded ? "" : " (no record kept: worked out from the files)");
    const terms = info.dropped || [];
    const label = el("div", { class: "dropped-title" }, terms.length
      ? `Left out of the summary, still in the archive (${number(terms.length)}):`
      : "The summary (or the pinned notes) keeps every name, number and date of the transcript.");
    const chips = el("ul", { class: "dropped-list", "data-testid": "dropped-terms" });
    chips.append(...terms.map((term) => {
      const chip = el("button", {
        type: "button", class: "term", "data-testid": "dropped-term",
        "aria-label": `Find “${term}” in the archived transcript`,
      }, term);
      chip.onclick = () => { model.send({ command: "find", term }); };
      const item = el("li");
      item.append(chip);
      return item;
    }));
    droppedBox.replaceChildren(label, chips);
    let body;
    if (model.get("exact")) {
      body = el("pre", { class: "content exact" });
      body.textContent = info.summary;
    } else {
      body = el("div", { class: "content" });
      body.append(renderMarkdown(info.summary));
    }
    summaryBody.replaceChildren(body);
    if (focusSummary) {
      focusSummary = false;
      summaryHead.focus();
    }
  }

  let focusSummary = false; // a compaction opened by the person: its summary gets the focus
  function openArchive(name, byPerson = false) {
    focusSummary = byPerson && Boolean(name);
    model.set("open_archive", name);
    model.set("archive_page", 0);
    model.save_changes();
  }
  function closeCompactionView() {
    const archive = model.get("open_archive");
    openArchive("");
    const row = [...timelineList.querySelectorAll("button.compaction")].find((b) => b.dataset.archive === archive);
    if (row) row.focus();
  }

  let pending = false; // a pin or unpin sent, its answer not in yet

  function noteNode(text, number) {
    const item = el("li", { class: "pinned-note", "data-testid": "pinned-note", value: String(number) });
    let body;
    if (model.get("exact")) {
      body = el("pre", { class: "content exact" });
      body.textContent = text;
    } else {
      body = el("div", { class: "content" });
      body.append(renderMarkdown(text));
    }
    const unpin = el("button", {
      type: "button", class: "unpin", "data-testid": "unpin", "aria-label": `Unpin note ${number}`,
    }, "Unpin");
    unpin.disabled = pending;
    unpin.onclick = () => {
      pending = true;
      drawNotes();
      model.send({ command: "unpin", number, note: text });
    };
    item.append(body, unpin);
    return item;
  }

  function drawNotes() {
    const items = model.get("pinned_notes");
    const ram = model.get("in_ram");
    const exists = model.get("exists");
    pinnedTitle.textContent = ram || !exists || !items.length
      ? "Pinned notes"
      : `Pinned notes · ${number(model.get("notes_tokens"))} of ${number(model.get("notes_budget"))} tokens`;
    if (ram) {
      pinnedInfo.textContent = "Pinned notes need persistent memory: this Conversation is kept in RAM only.";
    } else if (!exists) {
      pinnedInfo.textContent = "No agent yet: notes can be pinned once it is written.";
    } else if (!items.length) {
      pinnedInfo.textContent = "No pinned notes.";
    } else {
      pinnedInfo.textContent = "";
    }
    pinnedList.replaceChildren(...items.map((text, i) => noteNode(text, i + 1)));
    pinForm.hidden = ram || !exists;
    pinButton.disabled = pending;
  }

  // Enter pins, even where JupyterLab's notebook shortcuts have claimed the key first.
  pinInput.onkeydown = (event) => {
    if (event.key !== "Enter" || event.isComposing) return;
    event.preventDefault();
    event.stopPropagation();
    pinNote();
  };
  pinForm.onsubmit = (event) => {
    event.preventDefault();
    pinNote();
  };
  function pinNote() {
    if (pending) return;
    if (!pinInput.value.trim()) {
      model.set("status", "Not pinned: a note must not be empty.");
      drawStatus();
      return;
    }
    pending = true;
    drawNotes();
    model.send({ command: "pin", note: pinInput.value });
  }

  // Expanded or a one-line summary; live, or a saved view with no kernel behind it.
  let live = true;
  function drawMode() {
    const expanded = model.get("expanded");
    widget.classList.toggle("collapsed", !expanded);
    details.hidden = !expanded;
    miniGauge.hidden = expanded;
    toggle.setAttribute("aria-expanded", String(expanded));
    toggle.textContent = expanded ? "▾" : "▸";
    toggle.setAttribute("aria-label", expanded ? "Hide the memory inspector" : "Show the memory inspector");
    widget.classList.toggle("saved-view", !live);
    const when = model.get("last_activity");
    offline.textContent = live ? "" : "Saved view: no kernel follows this widget now (the notebook was "
      + "reopened, or its kernel stopped), so it shows the memory as it was"
      + (when ? ` (last activity ${when})` : "") + ". Run the cell again to inspect it live.";
    for (const control of details.querySelectorAll("button, input, select")) {
      if (!live && !control.classList.contains("copy")) control.disabled = true;
    }
  }
  async function checkLive() {
    let real = null;
    try {
      const ref = model.get("model_ref");
      real = ref && model.widget_manager ? await model.widget_manager.get_model(ref) : null;
    } catch (error) {
      real = null;
    }
    live = Boolean(real && real.comm_live);
    if (real && !watched) {
      watched = real;
      real.on("comm_live_update", onLiveChange);
    }
    drawAll();
  }
  let watched = null;
  function onLiveChange() {
    checkLive();
  }

  function drawStatus() {
    status.textContent = model.get("status");
    streaming.textContent = model.get("streaming");
  }

  function onMessage(content) {
    if (content && (content.command === "pin" || content.command === "unpin")) {
      pending = false;
      if (content.command === "pin" && content.ok) pinInput.value = ""; // kept when refused
      drawNotes();
      return;
    }
    if (content && content.command === "find") {
      if (content.index !== null && content.index !== undefined) {
        found = { index: content.index };
        drawList();
      }
      return;
    }
    if (!content || content.command !== "full") return;
    if (content.error) {
      model.set("status", content.error);
      drawStatus();
      return;
    }
    const key = `${content.source}:${content.index}`;
    whole.set(key, content.text);
    if (copying.delete(key)) copyText(`message ${content.index + 1} of ${content.source}`, content.text);
    drawList();
  }

  search.oninput = () => { model.set("query", search.value); model.save_changes(); };
  inArchives.onchange = () => { model.set("search_archives", inArchives.checked); model.save_changes(); };
  exact.onchange = () => { model.set("exact", exact.checked); model.save_changes(); };
  perMessage.onchange = () => { model.set("show_tokens", perMessage.checked); model.save_changes(); };
  order.onclick = () => {
    model.set("newest_first", !model.get("newest_first"));
    for (const [trait] of Object.values(PAGER)) model.set(trait, 0);
    model.save_changes();
  };
  first.onclick = () => goTo(0);
  prev.onclick = () => goTo(pages().page - 1);
  next.onclick = () => goTo(pages().page + 1);
  last.onclick = () => goTo(pages().count - 1);
  archives.onchange = () => openArchive(archives.value);
  roleFilter.onchange = () => { model.set("role", roleFilter.value); model.save_changes(); };
  pageInput.onkeydown = (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    const wanted = Number.parseInt(pageInput.value, 10);
    if (Number.isFinite(wanted)) goTo(wanted - 1);
    pageInput.value = "";
  };
  pageInput.onchange = () => {
    const wanted = Number.parseInt(pageInput.value, 10);
    if (Number.isFinite(wanted)) goTo(wanted - 1);
  };
  closeCompaction.onclick = closeCompactionView;
  toggle.onclick = () => {
    model.set("expanded", !model.get("expanded"));
    model.save_changes();
    drawMode();
  };
  // Escape closes an open compaction (the widget's keys are its own: data-lm-suppress-shortcuts).
  widget.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || summaryPane.hidden) return;
    event.preventDefault();
    event.stopPropagation();
    closeCompactionView();
  });
  compact.onclick = () => { model.send({ command: "compact" }); };

  const figures = ["name", "model_name", "exists", "in_ram", "counting", "tokens_used", "context_length",
    "threshold", "compacts_next", "usage_parts", "settings_recorded", "message_count", "archive_count", "memory_bytes",
    "last_compaction", "problems"];
  const listing = ["page", "page_size", "newest_first", "messages", "query", "search_archives", "search_page",
    "search_total", "search_results", "archives", "open_archive", "archive_page", "archive_total",
    "archive_messages", "exact", "show_tokens", "message_count", "compaction", "compactions", "listed_total",
    "role", "roles"];
  const statuses = ["status", "streaming"];
  const pinnedTraits = ["pinned_notes", "notes_tokens", "notes_budget", "in_ram", "exists", "exact"];
  const timelineTraits = ["compactions", "open_archive", "in_ram", "exists"];
  const handlers = [...figures.map((t) => [t, drawFigures]), ...listing.map((t) => [t, drawList]),
    ...statuses.map((t) => [t, drawStatus]), ...pinnedTraits.map((t) => [t, drawNotes]),
    ...timelineTraits.map((t) => [t, drawTimeline])];
  for (const [trait, handler] of handlers) model.on(`change:${trait}`, handler);
  model.on("msg:custom", onMessage);
  function drawAll() {
    drawFigures();
    drawList();
    drawNotes();
    drawTimeline();
    drawStatus();
    drawMode();
  }
  model.on("change:expanded", drawMode);
  drawAll();
  checkLive();
  return () => {
    model.off("change:expanded", drawMode);
    if (watched) watched.off("comm_live_update", onLiveChange);
    for (const [trait, handler] of handlers) model.off(`change:${trait}`, handler);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
