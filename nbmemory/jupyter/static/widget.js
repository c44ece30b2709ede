// The browser side of nbmemory's MemoryWidget. Message content is data: it is escaped before a
// few Markdown forms are turned into tags, so no HTML or script from a message ever runs.

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function inline(text) {
  return text
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>');
}

export function renderMarkdown(source) {
  const out = [];
  const blocks = escapeHtml(source).split(/```/);
  blocks.forEach((block, i) => {
    if (i % 2 === 1) {
      out.push(`<pre><code>${block.replace(/^[^\n]*\n/, "")}</code></pre>`);
      return;
    }
    for (const para of block.split(/\n{2,}/)) {
      const lines = para.split("\n").filter((l) => l.trim() !== "");
      if (!lines.length) continue;
      if (lines.every((l) => /^\s*[-*] /.test(l))) {
        out.push(`<ul>${lines.map((l) => `<li>${inline(l.replace(/^\s*[-*] /, ""))}</li>`).join("")}</ul>`);
      } else if (/^#{1,6} /.test(lines[0]) && lines.length === 1) {
        out.push(`<p><strong>${inline(lines[0].replace(/^#+ /, ""))}</strong></p>`);
      } else {
        out.push(`<p>${lines.map(inline).join("<br>")}</p>`);
      }
    }
  });
  return out.join("");
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function messageNode(item, source) {
  const node = el("div", { class: "message", "data-testid": "message" });
  const meta = el("div", { class: "meta" });
  meta.append(el("span", { class: "role" }, item.role), el("span", { class: "time" }, item.time));
  if (source) meta.append(el("span", { class: "time" }, source));
  const content = el("div", { class: item.folded ? "content folded" : "content" });
  content.innerHTML = renderMarkdown(item.content);
  node.append(meta, content);
  if (item.folded) {
    const more = el("button", {}, "Show more");
    more.onclick = () => { content.classList.toggle("folded"); };
    node.append(more);
  }
  return node;
}

function render({ model, el: root }) {
  const widget = el("div", { class: "nbmemory-widget", "data-testid": "nbmemory-widget" });
  const head = el("div", { class: "head" });
  const name = el("span", { class: "name" });
  const usage = el("span", { class: "usage", "data-testid": "usage" });
  head.append(name, usage);
  const gauge = el("div", { class: "gauge", "data-testid": "gauge" });
  const fill = el("div", { class: "fill" });
  const mark = el("div", { class: "threshold", "data-testid": "threshold" });
  gauge.append(fill, mark);
  const counts = el("div", { class: "counts", "data-testid": "counts" });
  const bar = el("div", { class: "bar" });
  const search = el("input", { type: "search", placeholder: "Search memory", "data-testid": "search" });
  const inArchives = el("input", { type: "checkbox", "data-testid": "search-archives" });
  const archivesLabel = el("label", {}, " archives too");
  archivesLabel.prepend(inArchives);
  const order = el("button", { "data-testid": "order" });
  const prev = el("button", { "data-testid": "previous" }, "‹");
  const next = el("button", { "data-testid": "next" }, "›");
  const pageText = el("span", { "data-testid": "page" });
  const archives = el("select", { "data-testid": "archives" });
  const compact = el("button", { "data-testid": "compact" }, "Compact");
  bar.append(search, archivesLabel, order, prev, pageText, next, archives, compact);
  const status = el("div", { class: "status", "data-testid": "status" });
  const streaming = el("div", { class: "streaming", "data-testid": "streaming" });
  const results = el("div", { "data-testid": "results" });
  const list = el("div", { "data-testid": "messages" });
  widget.append(head, gauge, counts, bar, status, streaming, results, list);
  root.append(widget);

  function draw() {
    const used = model.get("tokens_used");
    const window = model.get("context_length") || 1;
    const percent = Math.round((100 * used) / window);
    const threshold = model.get("threshold");
    name.textContent = model.get("model_name") ? `${model.get("name")} · ${model.get("model_name")}` : model.get("name");
    usage.textContent = `${used.toLocaleString("en")} / ${window.toLocaleString("en")} tokens (${percent}%)`;
    gauge.setAttribute("data-percent", String(percent));
    fill.style.width = `${Math.min(100, percent)}%`;
    fill.className = used >= threshold * window ? "fill over" : used >= 0.8 * threshold * window ? "fill near" : "fill";
    mark.style.left = `calc(${Math.min(100, threshold * 100)}% - 2px)`;
    mark.title = `compression at ${Math.round(threshold * 100)}%`;
    const bytes = model.get("memory_bytes");
    const file = bytes ? `MEMORY.md ${(bytes / 1024).toFixed(1)} KiB` : "no MEMORY.md (kept in RAM)";
    const last = model.get("last_compaction");
    counts.textContent = `${model.get("message_count")} messages · ${model.get("archive_count")} archives · ${file}` + (last ? ` · last compaction ${last}` : "");
    const size = model.get("page_size") || 1;
    const pages = Math.max(1, Math.ceil(model.get("message_count") / size));
    pageText.textContent = `page ${model.get("page") + 1} of ${pages}`;
    order.textContent = model.get("newest_first") ? "Newest first" : "Oldest first";
    status.textContent = model.get("status");
    streaming.textContent = model.get("streaming");
    const names = model.get("archives");
    archives.replaceChildren(el("option", { value: "" }, names.length ? "Open an archive…" : "No archives"), ...names.map((n) => el("option", { value: n }, n)));
    archives.value = model.get("open_archive");
    const opened = model.get("open_archive");
    results.replaceChildren(...(model.get("query") ? model.get("search_results").map((m) => messageNode(m, m.source)) : []));
    const shown = opened ? model.get("archive_messages") : model.get("messages");
    list.replaceChildren(...shown.map((m) => messageNode(m, opened ? opened : "")));
  }

  search.oninput = () => { model.set("query", search.value); model.save_changes(); };
  inArchives.onchange = () => { model.set("search_archives", inArchives.checked); model.save_changes(); };
  order.onclick = () => { model.set("newest_first", !model.get("newest_first")); model.set("page", 0); model.save_changes(); };
  prev.onclick = () => { model.set("page", Math.max(0, model.get("page") - 1)); model.save_changes(); };
  next.onclick = () => { model.set("page", model.get("page") + 1); model.save_changes(); };
  archives.onchange = () => { model.set("open_archive", archives.value); model.save_changes(); };
  compact.onclick = () => { model.send({ command: "compact" }); };
  const traits = ["name", "model_name", "tokens_used", "context_length", "threshold", "message_count",
    "archive_count", "memory_bytes", "last_compaction", "page", "page_size", "newest_first", "messages",
    "query", "search_results", "archives", "open_archive", "archive_messages", "streaming", "status"];
  for (const trait of traits) model.on(`change:${trait}`, draw);
  draw();
  return () => { for (const trait of traits) model.off(`change:${trait}`, draw); };
}

export default { render };
