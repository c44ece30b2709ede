// The message list: the memory, an archive or search results, a page at a time. Each message
// shows its role, time and place (and its tokens, if asked), the notebook cell it came from (if
// recorded; marked when that cell ran again), its text rendered or exact, a Copy
// button, and "Show full text" when it came folded; search hits and an archive's dropped terms
// are marked in it.
import { el } from "../views/dom";
import { number } from "../views/format";
import { foldNote } from "../views/fold";
import { anyCase, markText, wholeWord } from "../views/marks";
import { label, messageNumber } from "../views/vocabulary";
import { contentOf } from "./text";

const keyOf = (item) => `${item.source}:${item.index}`;

function contentNode(s, item) {
  const key = keyOf(item);
  const text = s.whole.has(key) ? s.whole.get(key) : item.text;
  return contentOf(text, s.model.get("exact"), { "data-testid": "exact-text" });
}

function messageNode(s, item, current) {
  const { model, whole } = s;
  const node = el("div", "message", undefined, { "data-testid": "message", role: "listitem", tabindex: "-1", "data-index": String(item.index), "data-source": item.source });
  const meta = el("div", "meta");
  meta.append(
    el("span", "role", item.role),
    el("span", "time", item.timestamp),
    el("span", "source", `${item.source} ${messageNumber(item.index)}`),
  );
  if (item.tokens !== undefined) {
    meta.insertBefore(
      el("span", "tokens", `${number(item.tokens)} tokens`, { "data-testid": "message-tokens", "data-tokens": String(item.tokens) }),
      meta.lastChild,
    );
  }
  const content = contentNode(s, item);
  if (current === "search") {
    const query = model.get("query").trim();
    markText(content, [[query, anyCase(query)]], "hit");
  } else if (current === "archive") {
    const dropped: string[] = model.get("compaction").dropped || [];
    markText(content, dropped.map((term) => [term, wholeWord(term)]), "dropped");
  }
  const copy = el("button", "copy", "Copy", { type: "button", "data-testid": "copy", "aria-label": `Copy message ${messageNumber(item.index)} of ${item.source}` });
  copy.onclick = () => copyMessage(s, item);
  meta.append(copy);
  node.append(meta);
  // its notebook cell; "superseded" when that cell ran again since
  const cell = item.provenance;
  if (cell) {
    node.append(el("div", cell.superseded ? "cell superseded" : "cell", [cell.label, cell.superseded_label].filter(Boolean).join(", "), { "data-testid": "cell" }));
  }
  node.append(content);
  if (item.folded && !whole.has(keyOf(item))) {
    const more = el("button", "more", label("show full"), { type: "button", "data-testid": "full-text" });
    more.onclick = () => {
      more.disabled = true;
      more.textContent = "Loading the whole message…";
      model.send({ command: "full", index: item.index, source: item.source });
    };
    node.append(foldNote(item.text.length, item.length, more, "fold", { "data-testid": "fold" }));
  }
  return node;
}

// The heading and the messages of the list in mode `current` (paging.js's `mode`).
function drawMessages(s, current) {
  const { model, heading, list } = s;
  let items;
  if (current === "search") {
    heading.textContent = model.get("search_caption");
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
  list.replaceChildren(...items.map((item) => messageNode(s, item, current)));
  if (!items.length && model.get("exists")) {
    list.append(el("div", "empty", label("empty"), { role: "listitem", "data-testid": "empty" }));
  }
}

// A dropped term looked for in the archive: its message, once listed, is marked and focused.
function showFound(s, current) {
  if (s.found && current === "archive") {
    const node = s.list.querySelector(`[data-index="${s.found.index}"]`);
    if (node) {
      s.found = null;
      node.classList.add("found");
      node.scrollIntoView({ block: "nearest" });
      node.focus({ preventScroll: true });
    }
  }
}

// Copy a message's whole stored text (fetched from Python first when it is folded).
async function writeClipboard(widget, text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (error) {
    const area = el("textarea", "copy-buffer", undefined, { "aria-hidden": "true" });
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

async function copyText(s, label, text) {
  const done = await writeClipboard(s.ctx.widget, text);
  s.ctx.say(done
    ? `Copied ${label} (${number(text.length)} characters).`
    : `Could not copy ${label}: this browser refused the clipboard.`);
}

function copyMessage(s, item) {
  const key = keyOf(item);
  const label = `message ${messageNumber(item.index)} of ${item.source}`;
  if (s.whole.has(key) || !item.folded) {
    copyText(s, label, s.whole.has(key) ? s.whole.get(key) : item.text);
    return;
  }
  // the whole text is the kernel's to give
  if (!s.ctx.live) {
    copyText(s, `the first ${number(item.text.length)} characters of ${label} (no kernel for the rest)`, item.text);
    return;
  }
  s.copying.add(key);
  s.model.send({ command: "full", index: item.index, source: item.source });
}

// Python's answer to "find": the index of the first archived message with the term, or null.
function onFind(s, content) {
  if (content.index !== null && content.index !== undefined) {
    s.found = { index: content.index };
    s.ctx.drawList();
  }
}

// Python's answer to "full": a message's whole text, shown (and copied, if that was asked).
function onFull(s, content) {
  if (content.error) {
    s.ctx.say(content.error);
    return;
  }
  const key = keyOf(content);
  s.whole.set(key, content.text);
  if (s.copying.delete(key)) copyText(s, `message ${messageNumber(content.index)} of ${content.source}`, content.text);
  s.ctx.drawList();
}

// The list's elements and its state: `whole` texts fetched from Python ("source:index" -> text),
// folded messages being fetched to be `copying`, and a dropped term `found` in the archive.
// `ctx` is the widget's: {model, widget, live, say(text), drawList()}.
function messagesView(ctx) {
  const heading = el("div", "listing", undefined, { "data-testid": "listing" });
  const list = el("div", "", undefined, { "data-testid": "messages", role: "list" });
  const listPane = el("div", "list-pane");
  listPane.append(heading, list);
  const s = { ctx, model: ctx.model, heading, list, whole: new Map(), copying: new Set(), found: null };
  return {
    listPane,
    draw: (current) => drawMessages(s, current),
    showFound: (current) => showFound(s, current),
    onFind: (content) => onFind(s, content),
    onFull: (content) => onFull(s, content),
  };
}

export { messagesView };
