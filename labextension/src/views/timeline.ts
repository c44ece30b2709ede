/**
 * The compaction timeline ("Compactions: what did it forget?") as both views show it: one row a
 * compaction, oldest first, each row a button that opens that compaction (its time, its line,
 * its archive), focusable and opened by Enter like any button. The frame says what opening
 * does (the panel's main-area view, the widget's summary beside its message list) and may add
 * its own controls to a row. Times, figures and archive names are put in as text.
 */
import { compactionLine, type ICompactionFacts } from './compactions';
import { el } from './dom';
import { label } from './vocabulary';

/** What a row asks of the frame: open the compaction at `position` (0 is the oldest) of
 * `count`. */
export interface ITimelineActions<C extends ICompactionFacts> {
  open(compaction: C, position: number, count: number): void;
  /** The frame's own controls of a row (the panel's "Show archive"), after the button. */
  extras?(compaction: C): HTMLElement[];
}

/** "What did compaction 2 forget?": a row's name, and the opened compaction's. */
export function forgetQuestion(position: number): string {
  return `What did compaction ${position + 1} forget?`;
}

/** The timeline: a titled section whose list `update` fills. */
export class CompactionTimeline<C extends ICompactionFacts = ICompactionFacts> {
  constructor(private readonly actions: ITimelineActions<C>) {
    const title = label('compactions', 'Compactions: what did it forget?');
    this.node = el('section', 'nbmemory-timeline', undefined, {
      'aria-label': title,
      'data-testid': 'nbmemory-timeline'
    });
    this.list = el('ol', 'nbmemory-timeline-list', undefined, {
      'aria-label': 'Compactions',
      'data-testid': 'nbmemory-timeline-list'
    });
    this.node.append(
      el('h4', 'nbmemory-timeline-title', title, { 'data-testid': 'nbmemory-timeline-title' }),
      this.list
    );
  }

  /** Show `agent`'s `compactions` (oldest first); `current` is the archive being looked at. */
  update(agent: string, compactions: C[], current: string | null): void {
    const count = compactions.length;
    this.list.replaceChildren(
      ...compactions.map((compaction, position) =>
        this.row(agent, compaction, [position, count], current)
      )
    );
    if (!compactions.length) {
      this.list.append(el('li', 'nbmemory-empty', label('no compactions', 'No compactions yet.')));
    }
  }

  /** Put the focus on the button of `archive`'s row (where Back and Escape return). */
  focusRow(archive: string): void {
    const rows = this.list.querySelectorAll<HTMLElement>('[data-testid="nbmemory-compaction"]');
    const row = [...rows].find(node => node.dataset.archive === archive);
    row?.querySelector<HTMLButtonElement>('button.nbmemory-compaction-open')?.focus();
  }

  private row(
    agent: string,
    compaction: C,
    [position, count]: [number, number],
    current: string | null
  ): HTMLLIElement {
    const row = el('li', 'nbmemory-compaction', undefined, {
      'data-testid': 'nbmemory-compaction',
      'data-agent': agent,
      'data-archive': compaction.archive,
      'aria-current': String(compaction.archive === current)
    });
    const time = compaction.time || '?';
    const line = compactionLine(compaction);
    const open = el('button', 'nbmemory-compaction-open', undefined, {
      type: 'button',
      'data-testid': 'nbmemory-compaction-open',
      'data-key': `open:${compaction.archive}`,
      title: 'Open the summary beside the transcript it replaced',
      'aria-label': `${forgetQuestion(position)} ${time} · ${line}`
    });
    open.append(
      el('span', 'nbmemory-compaction-number', `#${position + 1}`),
      el('time', 'nbmemory-compaction-time', time, { datetime: compaction.time }),
      el('span', 'nbmemory-compaction-figures', line, {
        'data-testid': 'nbmemory-compaction-figures'
      }),
      el('span', 'nbmemory-compaction-archive', compaction.archive, {
        title: 'The archive of this compaction: the transcript as it was'
      })
    );
    open.addEventListener('click', () => this.actions.open(compaction, position, count));
    row.append(open, ...(this.actions.extras?.(compaction) ?? []));
    return row;
  }

  readonly node: HTMLElement;
  private readonly list: HTMLOListElement;
}
