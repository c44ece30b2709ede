// The message list: the memory, an archive or search results, a page at a time, each message
// the views' card (views/message.ts); search hits and an archive's dropped terms are marked in
// it. Whole texts of folded messages and copies come from the kernel.
import { el, setText } from "../views/dom";
import { number } from "../views/format";
import { listCaption } from "../views/paging";
import { type Finder, anyCase, wholeWord } from "../views/marks";
import { type IMessage, type IToolMessage, messageCard } from "../views/message";
import { label, messageNumber } from "../views/vocabulary";

const keyOf = (item) => `${item.source}:${item.index}`;

// What the list marks in its messages: the search's matches, or an open archive's dropped terms.
function marksOf(model, current): { finders: [string, Finder][]; className: string } | undefined {
  if (current === "search") {
    const query = model.get("query").trim();
    return { finders: [[query, anyCase(query)]], className: "hit" };
  }
  if (current === "archive") {
    const dropped: string[] = model.get("compaction").dropped || [];
    return { finders: dropped.map((term): [string, Finder] => [term, wholeWord(term)]), className: "dropped" };
  }
  return undefined;
}

function messageNode(s, item: IMessage, current) {
  const { model, whole } = s;
  return messageCard(item, {
    classes: "",
    ids: "",
    exact: model.get("exact"),
    showSource: current !== "memory",
    marks: marksOf(model, current),
    copy: () => copyMessage(s, item),
    showFull: (_, more) => {
      more.disabled = true;
      more.textContent = "Loading the whole message…";
      model.send({ command: "full", index: item.index, source: item.source });
    },
  }, whole.get(keyOf(item)));
}

// The heading and the messages of the list in mode `current` (paging.js's `mode`).
function drawMessages(s, current) {
  const { model, heading, list } = s;
  let items;
  if (current === "search") {
    setText(heading, model.get("search_caption")); // it quotes the query
    items = model.get("search_results");
  } else {
    const archive = current === "archive";
    items = model.get(archive ? "archive_messages" : "messages");
    const total = model.get(archive ? "archive_total" : "listed_total");
    heading.textContent = listCaption(items, total, model.get("role"), model.get("newest_first"));
  }
  list.replaceChildren(...items.map((item) => messageNode(s, item, current)));
  // An empty search says so in its caption, once.
  if (!items.length && model.get("exists") && current !== "search") {
    list.append(el("li", "empty", label("empty"), { "data-testid": "empty" }));
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
    copyText(s, label, s.whole.has(key) ? s.whole.get(key).text : item.text);
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
  s.whole.set(key, { text: content.text, tool: content.tool as IToolMessage | undefined });
  if (s.copying.delete(key)) copyText(s, `message ${messageNumber(content.index)} of ${content.source}`, content.text);
  s.ctx.drawList();
}

// The list's elements and its state: `whole` texts fetched from Python ("source:index" -> the
// text, and its tool message if it is one),
// folded messages being fetched to be `copying`, and a dropped term `found` in the archive.
// `ctx` is the widget's: {model, widget, live, say(text), drawList()}.
function messagesView(ctx) {
  const heading = el("div", "listing", undefined, { "data-testid": "listing" });
  const list = el("ol", "messages", undefined, { "data-testid": "messages" });
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
