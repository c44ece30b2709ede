/**
 * The model's note edits waiting for review (Accept, Reject) and the record of every change
 * to the notes (Restore), under the pinned notes. Each line is the server's own wording of the
 * change (`said`), put in as text: notes are untrusted, and a proposal is what someone else's
 * text may have talked the model into.
 */
import { INoteChange, INotes } from './api';
import { button } from './dom';
import { el } from './views/dom';

/** What the review asks the server: `{accept: 3}`, `{restore: 1}`, `{approval: 'ask'}`. */
export type ReviewAction =
  | { accept: number }
  | { reject: number }
  | { restore: number }
  | { approval: string };

/** How the model's edits of its notes are taken, as `nbmemory.memory.note_history` names them. */
const APPROVALS: [string, string][] = [
  ['default', 'by default: kept for your review'],
  ['auto', 'applied at once'],
  ['ask', 'kept for your review'],
  ['off', 'refused']
];

export class NoteReview {
  /** `act` sends an action for the agent shown; buttons are off while `busy()`. */
  constructor(
    private readonly act: (action: ReviewAction) => void,
    private readonly busy: () => boolean
  ) {
    this.pendingTitle = el('h5', 'jp-nbmemory-review-title', 'Waiting for your review');
    this.pending = el('ul', 'jp-nbmemory-review', undefined, {
      'data-testid': 'nbmemory-pending',
      'aria-label': 'Note edits waiting for review'
    });
    const summary = el('summary', 'jp-nbmemory-history-title', 'History of the notes');
    this.history = el('ol', 'jp-nbmemory-history', undefined, {
      'data-testid': 'nbmemory-note-history',
      'aria-label': 'History of the notes'
    });
    this.record = el('details', 'jp-nbmemory-history-box', undefined, {
      'data-testid': 'nbmemory-history-box'
    });
    this.record.append(summary, this.history);
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
    this.node = el('div', 'jp-nbmemory-note-review');
    this.node.append(approval, this.pendingTitle, this.pending, this.record);
  }

  readonly node: HTMLElement;

  /** Draw `data`'s proposals and history (an older server sends neither: nothing shows). */
  render(data: INotes): void {
    this.approval.value = data.approval ?? 'default';
    this.approval.disabled = this.busy();
    const pending = data.pending ?? [];
    this.pending.replaceChildren(...pending.map(change => this.proposal(change)));
    this.pendingTitle.hidden = this.pending.hidden = !pending.length;
    const history = data.history ?? [];
    const last = history.length - 1;
    this.history.replaceChildren(...history.map((change, i) => this.change(change, i < last)));
    this.record.hidden = !history.length;
  }

  private proposal(change: INoteChange): HTMLLIElement {
    const row = this.line(change, 'nbmemory-proposal');
    row.append(
      this.button('Accept', `Accept proposal #${change.n}: apply it to the notes`, {
        accept: change.n
      }),
      this.button('Reject', `Reject proposal #${change.n}: the notes stay as they are`, {
        reject: change.n
      })
    );
    return row;
  }

  private change(change: INoteChange, restorable: boolean): HTMLLIElement {
    const row = this.line(change, 'nbmemory-change');
    if (restorable) {
      row.append(
        this.button('Restore', `Make the notes what they were after change #${change.n}`, {
          restore: change.n
        })
      );
    }
    return row;
  }

  private line(change: INoteChange, testid: string): HTMLLIElement {
    const row = el('li', 'jp-nbmemory-review-line', undefined, {
      'data-testid': testid,
      'data-n': String(change.n)
    });
    row.append(el('span', 'jp-nbmemory-review-said', change.said));
    return row;
  }

  private button(text: string, title: string, action: ReviewAction): HTMLButtonElement {
    const node = button(text, title, () => this.act(action), title);
    node.dataset.testid = `nbmemory-${text.toLowerCase()}`;
    node.disabled = this.busy();
    return node;
  }

  private readonly approval: HTMLSelectElement;
  private readonly pendingTitle: HTMLElement;
  private readonly pending: HTMLUListElement;
  private readonly record: HTMLDetailsElement;
  private readonly history: HTMLOListElement;
}
