/**
 * An agent's pinned notes as every view shows them (NOTES.md: in every request, never
 * compacted): numbered, each with an Unpin button, a field to pin a new one, and under them
 * their review (`noteReview.ts`). The frame around it (the panel's REST calls, the widget's
 * comm) carries out what a person asks and hands back the new notes. Note text is untrusted:
 * the frame renders it as it renders messages.
 */
import { el, setText } from './dom';
import { number } from './format';
import { INotes, NoteAction, noteButton } from './noteData';
import { NoteReview } from './noteReview';
import { label } from './vocabulary';

/** What the view needs of its frame. */
export interface INotesFrame {
  /** Carry out `action`; the frame then calls `done()` and `show()` with the new notes. */
  act(action: NoteAction): void;
  /** Put a note's untrusted `text` into `node`, as the frame renders messages. */
  renderText(node: HTMLElement, text: string): void | Promise<void>;
}

export class NotesView {
  constructor(private readonly frame: INotesFrame) {
    this.title = el('h4', 'jp-nbmemory-notes-title', 'Pinned notes', {
      'data-testid': 'nbmemory-notes-title'
    });
    this.list = el('ol', 'jp-nbmemory-notes', undefined, {
      'data-testid': 'nbmemory-notes',
      'aria-label': 'Pinned notes'
    });
    this.empty = el('p', 'jp-nbmemory-empty', '', { 'data-testid': 'nbmemory-notes-empty' });
    this.status = el('div', 'jp-nbmemory-notes-status', '', {
      role: 'status',
      'data-testid': 'nbmemory-notes-status'
    });
    this.pinInput = el('input', 'jp-mod-styled jp-nbmemory-pin-input', undefined, {
      type: 'text',
      placeholder: label('pin placeholder', 'Pin a note (kept in every request)'),
      'aria-label': 'Note to pin',
      'data-testid': 'nbmemory-pin-input'
    });
    this.pinButton = el(
      'button',
      'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button',
      'Pin',
      {
        type: 'submit',
        title: 'Pin this note: every request carries it, no compaction removes it',
        'aria-label': 'Pin this note',
        'data-testid': 'nbmemory-pin'
      }
    );
    this.pinForm = el('form', 'jp-nbmemory-pin-form');
    this.pinForm.append(this.pinInput, this.pinButton);
    this.pinForm.addEventListener('submit', event => {
      event.preventDefault();
      this.pin();
    });
    // Enter pins, even where a notebook's shortcuts would take the key first.
    this.pinInput.addEventListener('keydown', event => {
      if (event.key === 'Enter' && !event.isComposing) {
        event.preventDefault();
        event.stopPropagation();
        this.pin();
      }
    });
    this.review = new NoteReview(
      action => this.send(action),
      text => this.say(text)
    );
    this.node = el('section', 'jp-nbmemory-pinned', undefined, {
      'data-testid': 'nbmemory-pinned',
      'aria-label': 'Pinned notes'
    });
    this.node.append(
      this.title,
      this.list,
      this.empty,
      this.status,
      this.pinForm,
      this.review.node
    );
  }

  readonly node: HTMLElement;

  /**
   * Show `data`, or, when there are no notes to change, the sentence `unavailable` says why
   * (a memory kept in RAM, an agent not written yet).
   */
  async show(data: INotes | null, unavailable = ''): Promise<void> {
    const rendered = ++this.generation;
    const notes = data?.notes ?? [];
    this.title.textContent =
      data && notes.length
        ? `Pinned notes · ${number(data.tokens)} of ${number(data.budget)} tokens`
        : 'Pinned notes';
    const bodies: [HTMLElement, string][] = [];
    const focused = document.activeElement as HTMLElement | null;
    const key = focused && this.list.contains(focused) ? focused.dataset.key : undefined;
    this.list.replaceChildren(
      ...notes.map((text, i) => {
        const [row, body] = this.noteRow(text, i + 1);
        bodies.push([body, text]);
        return row;
      })
    );
    if (key !== undefined) {
      // Redrawn with the same notes (a poll): the focused Unpin button keeps the focus.
      this.list.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`)?.focus();
    }
    this.list.hidden = !notes.length; // the empty state is no numbered item ("1. No pinned notes.")
    this.empty.textContent = unavailable || label('no notes', 'No pinned notes.');
    this.empty.hidden = notes.length > 0;
    this.pinForm.hidden = !data;
    this.pinButton.disabled = this.busy;
    this.review.show(data, this.busy);
    for (const [body, text] of bodies) {
      if (rendered !== this.generation) {
        return;
      }
      await this.frame.renderText(body, text);
    }
  }

  /** Say `text` under the notes (what a change did, or why it was not made). */
  say(text: string): void {
    setText(this.status, text);
  }

  /** The answer to the last action is in: the buttons work again; a pinned note leaves the
   * field (kept when refused: nothing typed is lost). */
  done(ok: boolean, action: NoteAction): void {
    this.busy = false;
    this.pinButton.disabled = false;
    if (ok && 'pin' in action) {
      this.pinInput.value = '';
    }
  }

  private noteRow(text: string, shown: number): [HTMLLIElement, HTMLElement] {
    const row = el('li', 'jp-nbmemory-note', undefined, {
      'data-testid': 'nbmemory-note',
      'data-number': String(shown),
      value: String(shown)
    });
    const body = el('div', 'jp-nbmemory-note-body', undefined, {
      'data-testid': 'nbmemory-note-body'
    });
    const unpin = noteButton('Unpin', `Unpin note ${shown}`, `Unpin note ${shown}`, () =>
      this.send({ unpin: shown, note: text })
    );
    unpin.dataset.testid = 'nbmemory-unpin';
    unpin.dataset.key = `unpin:${shown}`;
    unpin.disabled = this.busy;
    row.append(body, unpin);
    return [row, body];
  }

  private pin(): void {
    const note = this.pinInput.value;
    if (!note.trim()) {
      this.say('Not pinned: a note must not be empty.');
      return;
    }
    this.send({ pin: note });
  }

  /** Hand `action` to the frame, the buttons off until its answer (`done`). */
  private send(action: NoteAction): void {
    if (this.busy) {
      return;
    }
    this.busy = true;
    this.pinButton.disabled = true;
    for (const button of this.node.querySelectorAll('button, select')) {
      (button as HTMLButtonElement).disabled = true;
    }
    this.frame.act(action);
  }

  private readonly title: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly empty: HTMLParagraphElement;
  private readonly status: HTMLElement;
  private readonly pinForm: HTMLFormElement;
  private readonly pinInput: HTMLInputElement;
  private readonly pinButton: HTMLButtonElement;
  private readonly review: NoteReview;
  /** An action sent, its answer not in yet; the latest drawing. */
  private busy = false;
  private generation = 0;
}
