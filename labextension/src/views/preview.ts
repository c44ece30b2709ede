/**
 * A compaction shown before it is made, in the panel's dialog and in the widget alike: the
 * model's summary to edit, the next request's tokens before and after, and the terms the
 * summary would drop, each with a box to keep it; Preview again, Compact, Cancel.
 *
 * What is shown is always what Compact writes: an edit of the summary is measured again by the
 * server (no model call), so the terms listed are those the edited summary drops; Preview again
 * keeps the person's edit (the model's new summary waits beside it) until they discard it. The
 * summary and the terms are the memory's text: put in as text, their bidirectional controls
 * shown, never applied.
 */
import { el, setText } from './dom';
import { counted, number } from './format';
import { showBidi, unshowBidi } from './vocabulary';

/** A compaction previewed (`nbmemory.views.report.preview_fields`): nothing changed yet. */
export interface ICompactPreview {
  /** The summary Compact writes: the model's, or the person's edit of it (`edited`). */
  summary: string;
  /** The model's summary. */
  drafted: string;
  edited: boolean;
  tokens_before: number;
  tokens_after: number | null;
  /** The terms of the transcript the summary and the pinned notes would not hold. */
  missing: string[];
  /** The terms asked to be kept. */
  keep: string[];
  /** The figures in one line, as every view words them. */
  words: string;
}

/** What the buttons and the box ask of the frame (the panel's REST calls, the widget's comm). */
export interface IPreviewActions {
  /** A new summary from the model keeping `keep`; `edit`, the person's edit, stays shown. */
  again(keep: string[], edit: string | null): void;
  /** Measure `summary` (an edit, or the model's summary again) without asking the model. */
  measure(summary: string): void;
  /** Write `summary` (never empty). */
  compact(summary: string): void;
  cancel(): void;
}

const SHOWN_TERMS = 60;
const MEASURE_AFTER_MS = 300;
const NEEDED = 'A summary is needed: it is what the memory keeps of the archived messages.';

/** The preview's elements; `show` draws a preview, `say` a problem or what is going on. */
export class CompactPreview {
  /** `agent` and `messages`: whose memory, and how many messages Compact archives. */
  constructor(
    agent: string,
    messages: number,
    private readonly actions: IPreviewActions
  ) {
    this.node = el('section', 'nbmemory-compact-preview', undefined, {
      'data-testid': 'nbmemory-compact-preview',
      'aria-label': `Compaction of ${agent}: preview`
    });
    const what = el(
      'p',
      '',
      `Nothing changes until you press Compact: then all ${counted(messages, 'message')} of ` +
        `${agent}'s MEMORY.md go to a new archive, word for word, and the summary below ` +
        'replaces them in the memory.',
      { 'data-testid': 'nbmemory-compact-what' }
    );
    const label = el('label', 'nbmemory-compact-label', 'Summary (the model’s; you may edit it)');
    label.append(this.box);
    this.box.addEventListener('input', () => this.edited());
    this.discard.addEventListener('click', () => this.discardEdit());
    const again = this.button('again', 'Preview again', () => this.again());
    again.title = 'Ask the model for a new summary that keeps the ticked terms';
    const bar = el('div', 'nbmemory-compact-buttons');
    bar.append(
      again,
      this.button('cancel', 'Cancel', () => this.actions.cancel()),
      this.button('confirm', 'Compact', () => this.compact())
    );
    this.node.append(what, this.tokens, this.problem, label, this.editNote, this.terms, bar);
  }

  /** Draw `preview`. The box takes the model's summary; a person's edit is already in it
   * (and whatever they typed since stays). */
  show(preview: ICompactPreview): void {
    if (this.asked !== null && preview.summary !== this.asked) {
      return; // an answer for text the person has changed since: a newer one is coming
    }
    this.asked = null;
    this.preview = preview;
    this.tokens.textContent = `${preview.words}.`;
    if (!preview.edited || !this.box.value) {
      this.box.value = showBidi(preview.summary); // no control reorders it while it is edited
    }
    this.drawEdit();
    const terms = [...preview.keep, ...preview.missing.filter(t => !preview.keep.includes(t))];
    const boxes = terms.slice(0, SHOWN_TERMS).map(term => {
      const box = el('input', '', undefined, { type: 'checkbox', value: term });
      box.checked = preview.keep.includes(term);
      const label = el('label', 'nbmemory-compact-term', ` ${term}`, {
        'data-testid': 'nbmemory-compact-term'
      });
      label.prepend(box);
      return label;
    });
    const more = terms.length - boxes.length;
    this.terms.replaceChildren(
      el(
        'legend',
        '',
        terms.length
          ? `It would drop ${counted(preview.missing.length, 'term')} (the archive keeps ` +
              'them); tick to keep:'
          : 'It drops no term.'
      ),
      ...boxes,
      ...(more > 0 ? [el('span', '', ` and ${number(more)} more`)] : [])
    );
  }

  /** Say `text` above the summary (a problem, or that the model is asked); '' clears it. */
  say(text: string): void {
    setText(this.problem, text);
  }

  /** The summary as Compact writes it. */
  get summary(): string {
    return unshowBidi(this.box.value);
  }

  private button(id: string, text: string, onClick: () => void): HTMLButtonElement {
    const button = el('button', `nbmemory-compact-${id}`, text, {
      type: 'button',
      'data-testid': `nbmemory-compact-${id}`
    });
    button.addEventListener('click', onClick);
    return button;
  }

  /** The person typed: measure the text once they pause. */
  private edited(): void {
    this.drawEdit();
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => this.measure(), MEASURE_AFTER_MS);
  }

  private measure(): void {
    const summary = this.summary;
    if (summary.trim() && summary !== this.preview?.summary) {
      this.asked = summary;
      this.actions.measure(summary);
    }
  }

  private discardEdit(): void {
    if (this.preview) {
      this.box.value = showBidi(this.preview.drafted);
      this.edited();
    }
  }

  /** Whether the box holds the person's edit, said beside a way to discard it. */
  private drawEdit(): void {
    const edit = this.preview !== null && this.summary.trim() !== this.preview.drafted.trim();
    this.editNote.hidden = !edit;
  }

  private again(): void {
    const keep = Array.from(
      this.terms.querySelectorAll<HTMLInputElement>('input:checked'),
      box => box.value
    );
    const drafted = this.preview?.drafted.trim() ?? '';
    const edit = this.summary.trim() && this.summary.trim() !== drafted ? this.summary : null;
    window.clearTimeout(this.timer);
    this.asked = edit;
    this.actions.again(keep, edit);
  }

  private compact(): void {
    const summary = this.summary;
    if (!summary.trim()) {
      this.say(NEEDED);
      return;
    }
    window.clearTimeout(this.timer);
    this.actions.compact(summary);
  }

  readonly node: HTMLElement;
  private preview: ICompactPreview | null = null;
  /** The summary last sent to be measured, until its answer is shown. */
  private asked: string | null = null;
  private timer = 0;
  private readonly tokens = el('p', '', undefined, { 'data-testid': 'nbmemory-compact-tokens' });
  private readonly problem = el('p', 'nbmemory-compact-problem', '', {
    role: 'alert',
    'data-testid': 'nbmemory-compact-problem'
  });
  private readonly box = el('textarea', 'nbmemory-compact-summary', undefined, {
    rows: '8',
    'aria-label': 'Summary that replaces the archived messages (the model’s; you may edit it)',
    'data-testid': 'nbmemory-compact-summary'
  });
  private readonly discard = el('button', 'nbmemory-compact-discard', 'Discard my edit', {
    type: 'button',
    title: 'Put the model’s summary back in the box',
    'data-testid': 'nbmemory-compact-discard'
  });
  private readonly editNote = ((): HTMLElement => {
    const note = el(
      'p',
      'nbmemory-compact-edit',
      'Your edit is what Compact writes, and what it drops is measured for it. ',
      { 'data-testid': 'nbmemory-compact-edited' }
    );
    note.append(this.discard);
    return note;
  })();
  private readonly terms = el('fieldset', 'nbmemory-compact-terms', undefined, {
    'data-testid': 'nbmemory-compact-dropped'
  });
}
