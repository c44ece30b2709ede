/**
 * The selected agent's pinned notes (NOTES.md: in every request, never compacted), numbered,
 * each with an Unpin button, and a field to pin a new one (`POST .../notes`, the "write"
 * action). Note text is untrusted and rendered like messages.
 */
import { Api, INotes, agentPath, reason } from './api';
import { button } from './dom';
import { el } from './views/dom';
import { number } from './views/format';
import { keepingFocus } from './pager';
import { TextRenderer } from './render';
import { NoteReview, ReviewAction } from './review';
import { label } from './views/vocabulary';

export class PinnedNotes {
  /** `exact()`: "Exact text" is ticked; `refresh()` reloads the panel (after a change). */
  constructor(
    private readonly api: Api,
    private readonly renderer: TextRenderer,
    private readonly exact: () => boolean,
    private readonly refresh: () => void
  ) {
    this.title = el('h4', 'jp-nbmemory-notes-title', 'Pinned notes');
    this.list = el('ol', 'jp-nbmemory-notes', undefined, {
      'data-testid': 'nbmemory-notes',
      'aria-label': 'Pinned notes'
    });
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
    const pinForm = el('form', 'jp-nbmemory-pin-form');
    pinForm.append(this.pinInput, this.pinButton);
    pinForm.addEventListener('submit', event => {
      event.preventDefault();
      void this.pin();
    });
    this.node = el('section', 'jp-nbmemory-pinned', undefined, {
      'data-testid': 'nbmemory-pinned',
      'aria-label': 'Pinned notes'
    });
    this.empty = el('p', 'jp-nbmemory-empty', label('no notes', 'No pinned notes.'), {
      'data-testid': 'nbmemory-notes-empty'
    });
    this.review = new NoteReview(
      action => void this.reviewed(action),
      () => this.busy
    );
    this.node.append(this.title, this.list, this.empty, this.status, pinForm, this.review.node);
  }

  readonly node: HTMLElement;

  /**
   * Whether `data`, agent `name`'s notes, differ from those shown. They are compared by
   * content: after a pin or unpin they show the POST's answer, which the next GET repeats, and
   * redrawing the list for nothing can swallow a click on an Unpin button.
   */
  differ(name: string, data: INotes): boolean {
    return name !== this.agent || JSON.stringify(data) !== JSON.stringify(this.notes);
  }

  /** Show agent `name`'s notes (what was said about another agent's goes). */
  async show(name: string, data: INotes): Promise<void> {
    this.status.textContent = name === this.agent ? this.status.textContent : '';
    this.notes = data;
    this.agent = name;
    await this.render();
  }

  /** The selected agent's pinned notes, numbered, each with its Unpin button. */
  async render(): Promise<void> {
    const data = this.notes;
    if (!data) {
      return;
    }
    const rendered = ++this.generation;
    this.title.textContent = data.notes.length
      ? `Pinned notes · ${number(data.tokens)} of ${number(data.budget)} tokens`
      : 'Pinned notes';
    const bodies: [HTMLElement, string][] = [];
    const rows = data.notes.map((text, i) => {
      const row = el('li', 'jp-nbmemory-note', undefined, {
        'data-testid': 'nbmemory-note',
        'data-number': String(i + 1)
      });
      const body = el('div', 'jp-nbmemory-note-body', undefined, {
        'data-testid': 'nbmemory-note-body'
      });
      const unpin = button(
        'Unpin',
        `Unpin note ${i + 1}`,
        () => void this.unpin(i + 1, text),
        `Unpin note ${i + 1}`
      );
      unpin.dataset.testid = 'nbmemory-unpin';
      unpin.dataset.key = `unpin:${i + 1}`;
      unpin.disabled = this.busy;
      row.append(body, unpin);
      bodies.push([body, text]);
      return row;
    });
    keepingFocus(this.list, () => {
      this.list.replaceChildren(...rows);
    });
    this.list.hidden = !rows.length; // the empty state is no numbered item ("1. No pinned notes.")
    this.empty.hidden = rows.length > 0;
    this.review.render(data);
    for (const [body, text] of bodies) {
      if (rendered !== this.generation) {
        return;
      }
      await this.renderer.render(body, text, this.exact());
    }
  }

  private async pin(): Promise<void> {
    const note = this.pinInput.value;
    if (!note.trim()) {
      this.status.textContent = 'Not pinned: a note must not be empty.';
      return;
    }
    const done = await this.change({ pin: note }, 'Not pinned');
    if (done) {
      this.pinInput.value = ''; // kept when the server refused it: nothing typed is lost
      this.status.textContent = `Pinned as note ${this.notes?.notes.length ?? ''}.`;
    }
  }

  private async unpin(numberShown: number, text: string): Promise<void> {
    const done = await this.change({ unpin: String(numberShown), note: text }, 'Not unpinned');
    if (done) {
      this.status.textContent = `Unpinned note ${numberShown}.`;
    }
  }

  private async reviewed(action: ReviewAction): Promise<void> {
    const [verb, n] = Object.entries(action)[0] as [string, number | string];
    const words: Record<string, [string, string]> = {
      accept: ['Not accepted', `Accepted proposal #${n}.`],
      reject: ['Not rejected', `Rejected proposal #${n}.`],
      restore: ['Not restored', `Restored the notes as they were after change #${n}.`],
      approval: ['Not set', `The model's note edits are now “${n}”.`]
    };
    if (await this.change(action, words[verb][0])) {
      this.status.textContent = words[verb][1];
    }
  }

  /** Send a change for the agent shown; show the new list or why it was refused. */
  private async change(
    body: Record<string, string> | ReviewAction,
    refused: string
  ): Promise<boolean> {
    const name = this.agent;
    if (!name || this.busy) {
      return false;
    }
    this.busy = true;
    this.pinButton.disabled = true;
    try {
      const data = await this.api.post<INotes>(agentPath(name, 'notes'), body);
      if (name === this.agent) {
        this.notes = data;
      }
      return true;
    } catch (error) {
      this.status.textContent = `${refused}: ${reason(error)}`;
      return false;
    } finally {
      this.busy = false;
      this.pinButton.disabled = false;
      // The agent's figures include the notes. Refreshing before anything is awaited also makes
      // a refresh under way, which read the notes before this change, give up instead of
      // showing them (`refresh` counts its generation synchronously).
      this.refresh();
      await this.render();
    }
  }

  private readonly title: HTMLElement;
  private readonly list: HTMLOListElement;
  private readonly empty: HTMLParagraphElement;
  private readonly status: HTMLElement;
  private readonly pinInput: HTMLInputElement;
  private readonly pinButton: HTMLButtonElement;
  private readonly review: NoteReview;
  /** The notes shown, whose agent they are, a change under way, the latest drawing. */
  private notes: INotes | null = null;
  private agent = '';
  private busy = false;
  private generation = 0;
}
