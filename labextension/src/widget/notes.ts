// The widget's frame of the pinned notes (../views/notes.ts): the notes come from the `notes`
// trait (the panel's REST answer, the same shape), and what a person asks goes to Python as a
// command (pin, unpin, review, approval), which answers `{command, ok}` and says the outcome in
// `status`.
import type { NoteAction } from "../views/noteData";
import { NotesView } from "../views/notes";
import type { Context } from "./model";
import { contentOf } from "./text";

// Why no notes can be changed: a memory kept in RAM, or no agent written yet; "" if they can.
function unavailable(ctx: Context): string {
  if (ctx.model.get("in_ram")) return "Pinned notes need persistent memory: this Conversation is kept in RAM only.";
  if (!ctx.model.get("exists")) return "No agent yet: notes can be pinned once it is written.";
  return "";
}

// The command Python carries `action` out by (MemoryWidget._command).
function command(action: NoteAction): Record<string, unknown> {
  if ("pin" in action) return { command: "pin", note: action.pin };
  if ("unpin" in action) return { command: "unpin", number: action.unpin, note: action.note };
  if ("approval" in action) return { command: "approval", value: action.approval };
  const [verb, n] = Object.entries(action)[0];
  return { command: "review", action: verb, n };
}

// The notes' section and how to draw it and hear Python's answers. `ctx` is the widget's.
function notesView(ctx: Context) {
  let asked: NoteAction | null = null;
  const view = new NotesView({
    act: (action) => {
      asked = action;
      ctx.model.send(command(action));
    },
    renderText: (node, text) => node.replaceChildren(contentOf(text, ctx.model.get("exact"))),
  });
  const draw = () => {
    const why = unavailable(ctx);
    const notes = ctx.model.get("notes");
    void view.show(why || !notes.name ? null : notes, why);
  };
  // Python's answer to an action: the buttons work again, and the view says what it did.
  const onAnswer = (content: { ok: boolean }) => {
    if (asked) view.done(content.ok, asked);
    asked = null;
    view.say(ctx.model.get("status"));
    ctx.say(""); // said once, beside the notes
    draw();
  };
  return { pinned: view.node, draw, onAnswer };
}

export { notesView };
