/**
 * The review of an agent's pinned notes, under them in every view: how the model's edits are
 * taken, the model's edits waiting for review (Accept, Reject), and the history of the notes,
 * newest first, where each earlier version can be restored. A restore first shows what it
 * would unpin and bring back, and changes nothing until the person confirms it. Each line is
 * the server's own wording of the change (`said`), put in as text: notes are untrusted, and a
 * proposal is what someone else's text may have talked the model into.
 */
import { el } from './dom';
import { counted } from './format';
import { INoteChange, INotes, NoteAction, noteButton } from './noteData';

/** How the model's edits of its notes are taken, as `nbmemory.memory.note_history` names them. */
const APPROVALS: [string, string][] = [
  ['default', 'by default: kept for your review'],
  ['auto', 'applied at once'],
  ['ask', 'kept for your review'],
  ['off', 'refused']
];

export class NoteReview {
  /** `act` hands an action to the frame; `say` tells the person what happened. */
  constructor(
    private readonly act: (action: NoteAction) => void,
    private readonly say: (text: string) => void
  ) {
    this.approval = el('select', 'jp-mod-styled jp-nbmemory-approval', undefined, {
      'data-testid': 'nbmemory-approval',
      'aria-label': "The model's note edits"
    });
    for (const [value, text] of APPROVALS) {
      this.approval.append(el('option', '', text, { value }));
    }
    this.approval.addEventListener('change', () => this.act({ approval: this.approval.value }));
    const approval = el('label', 'jp-nbmemory-approval-label', "The model's note edits: ");
    approval.append(this.approval);
    this.pendingTitle = el('h5', 'jp-nbmemory-review-title', 'Waiting for your review', {
      'data-testid': 'nbmemory-pending-title'
    });
    this.pending = el('ul', 'jp-nbmemory-review', undefined, {
      'data-testid': 'nbmemory-pending',
      'aria-label': 'Note edits waiting for review'
    });
    const summary = el('summary', 'jp-nbmemory-history-title', 'History of the notes', {
      'data-testid': 'nbmemory-history-title'
    });
    this.history = el('ol', 'jp-nbmemory-history', undefined, {
      'data-testid': 'nbmemory-note-history',
      'aria-label': 'History of the notes, newest first'
    });
    this.record = el('details', 'jp-nbmemory-history-box', undefined, {
      'data-testid': 'nbmemory-history-box'
    });
    this.record.append(summary, this.history);
    this.node = el('div', 'jp-nbmemory-note-review');
    this.node.append(approval, this.pendingTitle, this.pending, this.record);
  }

  readonly node: HTMLElement;

  /** Draw `data`'s setting, proposals and history (none without data); buttons off while
   * `busy`. A restore being confirmed stays open, reckoned against the notes as they are. */
  show(data: INotes | null, busy: boolean): void {
    this.data = data;
    this.busy = busy;
    this.approval.value = data?.approval ?? 'default';
    this.approval.disabled = busy;
    this.node.hidden = !data;
    const pending = data?.pending ?? [];
    this.pending.replaceChildren(...pending.map(change => this.proposal(change)));
    this.pendingTitle.hidden = this.pending.hidden = !pending.length;
    // A proposal waiting is listed once, above; it joins the history once settled.
    const waiting = new Set(pending.map(change => change.n));
    const history = (data?.history ?? []).filter(change => !waiting.has(change.n)).reverse();
    const current = data?.notes ?? [];
    if (!history.some(change => change.n === this.confirming && restorable(change, current))) {
      this.confirming = null;
    }
    this.history.replaceChildren(...history.map(change => this.change(change, current)));
    this.record.hidden = !history.length;
  }

  private proposal(change: INoteChange): HTMLLIElement {
    const row = this.line(change, 'nbmemory-proposal');
    row.append(
      this.button('Accept', `Accept proposal #${change.n}: apply it to the notes`, change.n, {
        accept: change.n
      }),
      this.button('Reject', `Reject proposal #${change.n}: the notes stay as they are`, change.n, {
        reject: change.n
      })
    );
    return row;
  }

  private change(change: INoteChange, current: string[]): HTMLLIElement {
    const row = this.line(change, 'nbmemory-change');
    if (restorable(change, current)) {
      const restore = noteButton(
        'Restore',
        `Make the notes what they were after change #${change.n}: see what it changes first`,
        `Restore #${change.n}`,
        () => this.ask(change.n)
      );
      restore.dataset.testid = 'nbmemory-restore';
      restore.disabled = this.busy || this.confirming === change.n;
      row.append(restore);
      if (this.confirming === change.n) {
        row.append(this.confirmation(change, current));
      }
    }
    return row;
  }

  /** Ask before restoring version `n`: redraw its line with what the restore would do. */
  private ask(n: number): void {
    this.confirming = n;
    this.show(this.data, this.busy);
    this.history
      .querySelector<HTMLButtonElement>('[data-testid="nbmemory-restore-cancel"]')
      ?.focus();
  }

  /** What restoring `change` would unpin (the notes pinned since) and bring back, with the
   * buttons that restore it or leave the notes as they are. */
  private confirmation(change: INoteChange, current: string[]): HTMLElement {
    const removes = current.filter(note => !change.notes.includes(note));
    const brings = change.notes.filter(note => !current.includes(note));
    const box = el('div', 'jp-nbmemory-restore-confirm', undefined, {
      role: 'group',
      'aria-label': `Restore the notes as they were after #${change.n}?`,
      'data-testid': 'nbmemory-restore-confirm'
    });
    box.append(el('p', '', `Restore the notes as they were after #${change.n}?`));
    const listed = (said: string, notes: string[], testid: string): void => {
      if (!notes.length) {
        return;
      }
      const list = el('ul', 'jp-nbmemory-restore-list', undefined, { 'data-testid': testid });
      list.append(...notes.map(note => el('li', '', note)));
      box.append(el('p', '', said), list);
    };
    listed(`It unpins ${counted(removes.length, 'note')} pinned since:`, removes, 'nbmemory-restore-removes');
    listed(`It brings back ${counted(brings.length, 'note')}:`, brings, 'nbmemory-restore-brings');
    if (!removes.length && !brings.length) {
      box.append(el('p', '', 'It only puts the notes back in their order of then.'));
    }
    const yes = noteButton(
      'Restore these notes',
      `Restore the notes as they were after #${change.n}`,
      'Restore these notes',
      () => {
        this.confirming = null;
        this.act({ restore: change.n });
      }
    );
    yes.dataset.testid = 'nbmemory-restore-yes';
    const no = noteButton('Cancel', 'Leave the notes as they are', 'Cancel', () => {
      this.confirming = null;
      this.say('Not restored: the notes are as they were.');
      this.show(this.data, this.busy);
    });
    no.dataset.testid = 'nbmemory-restore-cancel';
    yes.disabled = no.disabled = this.busy;
    box.append(yes, no);
    return box;
  }

  private line(change: INoteChange, testid: string): HTMLLIElement {
    const row = el('li', 'jp-nbmemory-review-line', undefined, {
      'data-testid': testid,
      'data-n': String(change.n)
    });
    row.append(el('span', 'jp-nbmemory-review-said', change.said));
    return row;
  }

  private button(text: string, title: string, n: number, action: NoteAction): HTMLButtonElement {
    const node = noteButton(text, title, `${text} #${n}`, () => this.act(action));
    node.dataset.testid = `nbmemory-${text.toLowerCase()}`;
    node.disabled = this.busy;
    return node;
  }

  private readonly approval: HTMLSelectElement;
  private readonly pendingTitle: HTMLElement;
  private readonly pending: HTMLUListElement;
  private readonly record: HTMLDetailsElement;
  private readonly history: HTMLOListElement;
  /** The notes shown; buttons are off while an action is under way. */
  private data: INotes | null = null;
  private busy = false;
  /** The version whose restore waits for the person's confirmation. */
  private confirming: number | null = null;
}

/** Whether `change` is a version of the notes other than the `current` notes. */
function restorable(change: INoteChange, current: string[]): boolean {
  return change.version && JSON.stringify(change.notes) !== JSON.stringify(current);
}
