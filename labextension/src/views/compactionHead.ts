/**
 * An opened compaction's head, as both views show it: which compaction it is, its line (time,
 * figures, archive, messages kept), Back, the terms its summary dropped (each finds itself in
 * the archived transcript), and the summary: "What the memory holds now", or the summary a later
 * compaction replaced. The summary is untrusted text: the frame renders it (sanitized Markdown or
 * exact text) through `render`; everything else goes in as text. The archived transcript is the
 * frame's (the panel's pager, the widget's message list).
 */
import { archivedLine, droppedSection, type ICompactionFacts } from './compactions';
import { el, setText } from './dom';
import { label } from './vocabulary';

/** What the head asks of the frame. */
export interface ICompactionHeadActions {
  /** Put `text` into `body`: the frame's renderer, in its "Exact text" state. */
  render(body: HTMLElement, text: string): void | Promise<void>;
  /** Show the first message of the archived transcript holding `term`. */
  find(term: string): void;
  /** Close the compaction and give the focus back to its row of the timeline. */
  back(): void;
}

/** The head's elements; `show` fills them with one compaction. */
export class CompactionHead {
  /** `markClass`: the class of the dropped terms' marks (the transcript's marks have it too). */
  constructor(
    private readonly actions: ICompactionHeadActions,
    private readonly markClass: string
  ) {
    this.node = el('section', 'nbmemory-compaction-head', undefined, {
      'aria-label': "The compaction's summary",
      'data-testid': 'nbmemory-compaction-head'
    });
    this.title = el('h3', 'nbmemory-compaction-title', undefined, {
      tabindex: '-1',
      'data-testid': 'nbmemory-compaction-title'
    });
    this.line = el('div', 'nbmemory-compaction-line', undefined, {
      'data-testid': 'nbmemory-compaction-line'
    });
    const back = el('button', 'nbmemory-close-compaction', label('back', 'Back to the memory'), {
      type: 'button',
      'data-testid': 'nbmemory-close-compaction',
      'aria-label': 'Close this compaction and show the memory'
    });
    back.addEventListener('click', () => this.actions.back());
    this.dropped = el('div', 'nbmemory-compaction-dropped');
    this.summaryTitle = el('h4', 'nbmemory-summary-title', undefined, {
      'data-testid': 'nbmemory-summary-title'
    });
    this.summary = el('div', 'nbmemory-summary', undefined, { 'data-testid': 'nbmemory-summary' });
    this.node.append(this.title, this.line, back, this.dropped, this.summaryTitle, this.summary);
  }

  /** Show `compaction`, number `position + 1` of `count` (the last is what the memory holds). */
  async show(compaction: ICompactionFacts & { summary: string }, position: number, count: number) {
    this.shown = compaction;
    setText(this.title, `Compaction ${position + 1} of ${count}`);
    setText(this.line, archivedLine(compaction));
    this.dropped.replaceChildren(
      droppedSection(compaction, term => this.actions.find(term), this.markClass)
    );
    setText(
      this.summaryTitle,
      position + 1 === count
        ? label('summary now', 'What the memory holds now')
        : label('summary then', 'The summary this compaction wrote (a later one replaced it)')
    );
    await this.rerender();
  }

  /** Render the summary again (the frame's "Exact text" changed). */
  async rerender(): Promise<void> {
    if (this.shown) {
      await this.actions.render(this.summary, this.shown.summary);
    }
  }

  /** Give the focus to the head (a compaction opened by the person). */
  focus(): void {
    this.title.focus();
  }

  readonly node: HTMLElement;
  private readonly title: HTMLElement;
  private readonly line: HTMLElement;
  private readonly dropped: HTMLElement;
  private readonly summaryTitle: HTMLElement;
  private readonly summary: HTMLElement;
  private shown: (ICompactionFacts & { summary: string }) | null = null;
}

/** Escape inside `root`, while `isOpen()`, goes `back` (the views' keys stay their own). */
export function backOnEscape(root: HTMLElement, isOpen: () => boolean, back: () => void): void {
  root.addEventListener('keydown', event => {
    if (event.key !== 'Escape' || !isOpen()) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    back();
  });
}
