// Pinned notes: NOTES.md, carried by every request and never compacted. Each note with its
// Unpin button, and a field to pin a new one; Python answers each pin or unpin.
import { el } from "../views/dom";
import { number } from "../views/format";
import { label } from "../views/vocabulary";
import { contentOf } from "./text";

function notesNodes(model) {
  const pinned = el("section", "pinned", undefined, { "data-testid": "pinned", "aria-label": "Pinned notes" });
  const pinnedTitle = el("div", "pinned-title", undefined, { "data-testid": "pinned-title" });
  const pinnedList = el("ol", "pinned-list", undefined, { "data-testid": "pinned-notes" });
  const pinnedInfo = el("div", "pinned-info", undefined, { "data-testid": "pinned-info" });
  const pinForm = el("form", "pin-form", undefined, { "data-lm-suppress-shortcuts": "true" });
  const pinInput = el("input", "", undefined, { type: "text", placeholder: label("pin placeholder"), "data-testid": "pin-input", "aria-label": "Note to pin" });
  const pinButton = el("button", "", "Pin", { type: "submit", "data-testid": "pin", "aria-label": "Pin this note" });
  pinForm.append(pinInput, pinButton);
  const changes = el("ul", "note-changes", undefined, { "data-testid": "note-changes", "aria-label": "Note edits and history" });
  pinned.append(pinnedTitle, pinnedInfo, pinnedList, pinForm, changes);
  return { pinned, pinnedTitle, pinnedList, pinnedInfo, pinForm, pinInput, pinButton, changes };
}

function noteNode(s, text, number) {
  const item = el("li", "pinned-note", undefined, { "data-testid": "pinned-note", value: String(number) });
  const body = contentOf(text, s.model.get("exact"));
  const unpin = el("button", "unpin", "Unpin", { type: "button", "data-testid": "unpin", "aria-label": `Unpin note ${number}` });
  unpin.disabled = s.pending;
  unpin.onclick = () => {
    s.pending = true;
    drawNotes(s);
    s.model.send({ command: "unpin", number, note: text });
  };
  item.append(body, unpin);
  return item;
}

// A button that sends one review action (accept, reject, restore) of change `n` to Python.
function reviewButton(s, action, n, text) {
  const button = el("button", "", text, { type: "button", "data-testid": action, "aria-label": `${text} #${n}` });
  button.disabled = s.pending;
  button.onclick = () => {
    s.pending = true;
    drawNotes(s);
    s.model.send({ command: "review", action, n });
  };
  return button;
}

// The model's edits waiting for review (Accept, Reject), then the latest changes (Restore, but
// the newest: the notes are that already). Each line is Python's wording, put in as text.
function changeNodes(s) {
  const changes = s.model.get("note_changes");
  const newest = changes.find((change) => !change.pending);
  return changes.map((change) => {
    const item = el("li", "", change.said, { "data-testid": change.pending ? "proposal" : "note-change" });
    if (change.pending) {
      item.append(reviewButton(s, "accept", change.n, "Accept"), reviewButton(s, "reject", change.n, "Reject"));
    } else if (change !== newest) {
      item.append(reviewButton(s, "restore", change.n, "Restore"));
    }
    return item;
  });
}

function drawNotes(s) {
  const { model, pinnedTitle, pinnedInfo, pinnedList, pinForm, pinButton } = s;
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
  pinnedList.replaceChildren(...items.map((text, i) => noteNode(s, text, i + 1)));
  s.changes.replaceChildren(...changeNodes(s));
  pinForm.hidden = ram || !exists;
  pinButton.disabled = s.pending;
}

function pinNote(s) {
  if (s.pending) return;
  if (!s.pinInput.value.trim()) {
    s.ctx.say("Not pinned: a note must not be empty.");
    return;
  }
  s.pending = true;
  drawNotes(s);
  s.model.send({ command: "pin", note: s.pinInput.value });
}

// Python's answer to a pin or unpin: the buttons work again; a pinned note leaves the field.
function onAnswer(s, content) {
  s.pending = false;
  // kept when refused
  if (content.command === "pin" && content.ok) s.pinInput.value = "";
  drawNotes(s);
}

// The notes' elements and `pending`: a pin or unpin sent, its answer not in yet. `ctx` is the
// widget's: {model, say(text)}.
function notesView(ctx) {
  const s = { ctx, model: ctx.model, ...notesNodes(ctx.model), pending: false };
  // Enter pins, even where JupyterLab's notebook shortcuts have claimed the key first.
  s.pinInput.onkeydown = (event) => {
    if (event.key !== "Enter" || event.isComposing) return;
    event.preventDefault();
    event.stopPropagation();
    pinNote(s);
  };
  s.pinForm.onsubmit = (event) => {
    event.preventDefault();
    pinNote(s);
  };
  return { pinned: s.pinned, draw: () => drawNotes(s), onAnswer: (content) => onAnswer(s, content) };
}

export { notesView };
