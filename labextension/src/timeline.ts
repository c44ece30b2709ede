/**
 * The compaction timeline ("what did it forget?"): every compaction of the selected agent, with
 * its time, the tokens before and after, and its archive; opening one shows, in the main area,
 * the summary beside the transcript it replaced (the archive, a page at a time), with each
 * dropped term (a name, number, date or identifier of the transcript that neither the summary
 * nor the pinned notes hold) listed and marked in the transcript.
 *
 * Summaries, transcripts and terms are untrusted text: they are rendered like messages
 * (sanitized Markdown or exact text) and marked by splitting text nodes, never as HTML.
 */
import { Widget } from '@lumino/widgets';

import { Api, ICompaction, IFound, IItem, IPage, agentPath, query, reason } from './api';
import { CellOpener, cellLine } from './cells';
import { button, panelFoldNote } from './dom';
import { el, setText } from './views/dom';
import { number } from './views/format';
import { shownNumbers } from './views/paging';
import { markText, wholeWord } from './views/marks';
import { archivedLine, compactionLine, droppedSection } from './views/compactions';
import { TextRenderer } from './render';
import { label, messageNumber } from './views/vocabulary';

const PAGE_SIZE = 20;

/** The compaction list of the sidebar; a compaction opens with `onOpen`. */
export class CompactionTimeline {
  constructor(
    private readonly onOpen: (compaction: ICompaction, position: number, count: number) => void,
    private readonly onShowArchive: (archive: string) => void
  ) {
    this.list = el('ol', 'jp-nbmemory-timeline', undefined, {
      'aria-label': 'Compactions',
      'data-testid': 'nbmemory-timeline'
    });
    const title = label('compactions', 'Compactions: what did it forget?');
    this.node = el('section', 'jp-nbmemory-compactions', undefined, { 'aria-label': title });
    this.node.append(el('h4', 'jp-nbmemory-section-title', title), this.list);
  }

  /** Show agent `agent`'s `compactions` (oldest first); `current` is the archive open in the
   * message list. */
  update(agent: string, compactions: ICompaction[], current: string | null): void {
    const count = compactions.length;
    this.list.replaceChildren(
      ...compactions.map((compaction, position) => {
        const row = el('li', 'jp-nbmemory-compaction', undefined, {
          'data-testid': 'nbmemory-compaction',
          'data-agent': agent,
          'data-archive': compaction.archive,
          'aria-current': String(compaction.archive === current)
        });
        const head = el('div', 'jp-nbmemory-compaction-head');
        head.append(
          el('span', 'jp-nbmemory-compaction-number', `#${position + 1}`),
          el('time', 'jp-nbmemory-compaction-time', compaction.time, {
            datetime: compaction.time
          })
        );
        const figures = el('div', 'jp-nbmemory-agent-figures', compactionLine(compaction), {
          'data-testid': 'nbmemory-compaction-figures'
        });
        const actions = el('div', 'jp-nbmemory-compaction-actions');
        const open = button(
          'What did it forget?',
          'Open the summary beside the transcript it replaced',
          () => this.onOpen(compaction, position, count),
          `What did compaction ${position + 1} forget?`
        );
        open.dataset.key = `open:${compaction.archive}`;
        const show = button(
          'Show archive',
          `Show ${compaction.archive} in the message list`,
          () => this.onShowArchive(compaction.archive),
          `Show archive ${compaction.archive}`
        );
        show.dataset.key = `show:${compaction.archive}`;
        actions.append(open, show);
        const archive = el('div', 'jp-nbmemory-compaction-archive', compaction.archive, {
          title: 'The archive of this compaction: the transcript as it was'
        });
        row.append(head, figures, archive, actions);
        return row;
      })
    );
    if (!count) {
      this.list.append(
        el('li', 'jp-nbmemory-empty', label('no compactions', 'No compactions yet.'))
      );
    }
  }

  readonly node: HTMLElement;
  private readonly list: HTMLOListElement;
}

/**
 * A compaction in the main area: the summary (left) beside the transcript it replaced (right,
 * paged), and the dropped terms, listed and marked wherever they occur in the transcript.
 */
export class CompactionView extends Widget {
  constructor(
    private readonly api: Api,
    private readonly renderer: TextRenderer,
    readonly agent: string,
    readonly compaction: ICompaction,
    position: number,
    count: number,
    private readonly openCell: CellOpener | null = null
  ) {
    super();
    this.addClass('jp-nbmemory-view');
    this.node.dataset.testid = 'nbmemory-compaction-view';
    this.node.dataset.agent = agent; // what the commands act on when used here
    this.node.dataset.archive = compaction.archive;
    this.node.tabIndex = -1;
    this.id = CompactionView.idFor(agent, compaction.archive);
    this.title.label = `${agent}: compaction ${position + 1}`;
    this.title.caption =
      `${agent}: what compaction ${position + 1} of ${count} forgot (${compaction.archive})`;
    this.title.closable = true;

    this.exact = el('input', '', undefined, { type: 'checkbox' });
    this.exact.addEventListener('change', () => void this.renderAll());
    const exactLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: 'Show the summary and the transcript exactly as stored, with no Markdown'
    });
    exactLabel.append(this.exact, ' Exact text');

    const header = el('header', 'jp-nbmemory-view-header');
    header.append(
      el('h2', 'jp-nbmemory-view-title', `${agent}: compaction ${position + 1} of ${count}`),
      el('div', 'jp-nbmemory-view-figures', archivedLine(compaction), {
        'data-testid': 'nbmemory-view-figures'
      }),
      exactLabel
    );
    const dropped = droppedSection(
      compaction,
      term => void this.find(term),
      'jp-nbmemory-dropped-mark'
    );

    this.summary = el('div', 'jp-nbmemory-message-body jp-nbmemory-summary-body', undefined, {
      'data-testid': 'nbmemory-summary'
    });
    const summary = el('section', 'jp-nbmemory-view-column', undefined, {
      'aria-label': 'Summary'
    });
    summary.append(
      el(
        'h3',
        'jp-nbmemory-section-title',
        position + 1 === count
          ? label('summary now', 'What the memory holds now')
          : label('summary then', 'The summary this compaction wrote (a later one replaced it)')
      ),
      this.summary
    );

    this.caption = el('span', 'jp-nbmemory-caption', '', { role: 'status' });
    this.pager = el('div', 'jp-nbmemory-viewbar');
    this.transcript = el('ol', 'jp-nbmemory-messages', undefined, {
      'aria-label': 'Transcript replaced',
      'data-testid': 'nbmemory-transcript'
    });
    const transcript = el('section', 'jp-nbmemory-view-column', undefined, {
      'aria-label': 'Transcript replaced'
    });
    transcript.append(
      el(
        'h3',
        'jp-nbmemory-section-title',
        label('transcript', 'Transcript it replaced (the archive)')
      ),
      this.pager,
      this.transcript
    );
    const columns = el('div', 'jp-nbmemory-view-columns');
    columns.append(summary, transcript);
    this.node.append(header, dropped, columns);

  }

  static idFor(agent: string, archive: string): string {
    return `nbmemory-compaction:${encodeURIComponent(agent)}:${encodeURIComponent(archive)}`;
  }

  /** Load the first page. */
  async load(): Promise<void> {
    await this.showPage(0);
  }

  private async showPage(offset: number, focus?: number): Promise<void> {
    try {
      const { data } = await this.api.get<IPage>(
        agentPath(this.agent, 'archives', this.compaction.archive) +
          query({ offset, limit: PAGE_SIZE, newest_first: false })
      );
      this.page = data;
      await this.renderAll();
      if (focus !== undefined) {
        const card = this.transcript.querySelector<HTMLElement>(`[data-index="${focus}"]`);
        if (card) {
          card.classList.add('jp-mod-current');
          card.focus();
          card.scrollIntoView({ block: 'nearest' });
        }
      }
    } catch (error) {
      this.caption.textContent = `Could not read ${this.compaction.archive}: ${reason(error)}`;
    }
  }

  private async renderAll(): Promise<void> {
    const exact = this.exact.checked;
    await this.renderer.render(this.summary, this.compaction.summary, exact);
    const page = this.page;
    if (!page) {
      return;
    }
    const { total, offset, items } = page;
    this.caption.textContent = items.length
      ? `Messages ${shownNumbers(items)} of ${number(total)}, oldest first`
      : 'The archive holds no messages.';
    const previous = button('Previous', 'Earlier messages of the transcript', () =>
      void this.showPage(Math.max(0, offset - PAGE_SIZE))
    );
    const next = button('Next', 'Later messages of the transcript', () =>
      void this.showPage(offset + PAGE_SIZE)
    );
    previous.disabled = offset === 0;
    next.disabled = offset + items.length >= total;
    this.pager.replaceChildren(this.caption, previous, next);
    const cards = await Promise.all(items.map(item => this.card(item, exact)));
    this.transcript.replaceChildren(...cards);
    if (!items.length) {
      this.transcript.append(el('li', 'jp-nbmemory-empty', label('empty', 'Nothing here.')));
    }
  }

  private async card(item: IItem, exact: boolean): Promise<HTMLLIElement> {
    const card = el('li', 'jp-nbmemory-message', undefined, {
      'data-testid': 'nbmemory-transcript-message',
      'data-agent': this.agent,
      'data-source': item.source,
      'data-index': String(item.index),
      'data-role': item.role,
      tabindex: '0'
    });
    const meta = el('div', 'jp-nbmemory-message-meta');
    meta.append(
      el('span', 'jp-nbmemory-role', item.role),
      el('span', 'jp-nbmemory-when', `${messageNumber(item.index)} ${item.timestamp}`)
    );
    const body = el('div', 'jp-nbmemory-message-body');
    card.append(meta);
    if (item.provenance) {
      card.append(cellLine(item.provenance, this.openCell));
    }
    card.append(body);
    const text = this.full.get(item.index) ?? item.text;
    await this.renderer.render(body, text, exact);
    const marked = markText(
      body,
      this.compaction.dropped.map(term => [term, wholeWord(term)]),
      'jp-nbmemory-dropped-mark'
    );
    if (marked) {
      card.dataset.dropped = String(marked);
    }
    if (item.folded && !this.full.has(item.index)) {
      card.append(
        panelFoldNote(item.text.length, item.length, () => void this.loadFull(item.index))
      );
    }
    return card;
  }

  private async loadFull(index: number): Promise<void> {
    try {
      const { data } = await this.api.get<IItem>(
        agentPath(this.agent, 'messages', String(index)) +
          query({ archive: this.compaction.archive })
      );
      this.full.set(index, data.text);
      await this.showPage(this.page?.offset ?? 0, index);
    } catch (error) {
      this.caption.textContent = `Could not load message ${messageNumber(index)}: ${reason(error)}`;
    }
  }

  /** Go to the first message of the transcript that holds `term` (the server finds it). */
  private async find(term: string): Promise<void> {
    setText(this.caption, `Looking for “${term}”…`);
    const archive = this.compaction.archive;
    try {
      const { data: found } = await this.api.get<IFound>(
        agentPath(this.agent, 'find') +
          query({ term, archive, limit: PAGE_SIZE, newest_first: false })
      );
      if (found.index === null) {
        setText(this.caption, `“${term}” is not in ${archive} any more.`);
        return;
      }
      const shown = await this.api.get<IPage>(
        agentPath(this.agent, 'archives', archive) +
          query({ offset: found.offset, limit: PAGE_SIZE, newest_first: false })
      );
      const item = shown.data.items.find(i => i.index === found.index);
      if (
        item?.folded &&
        !item.text.toLowerCase().includes(term.toLowerCase()) &&
        !this.full.has(found.index)
      ) {
        const whole = await this.api.get<IItem>(
          agentPath(this.agent, 'messages', String(found.index)) + query({ archive })
        );
        this.full.set(found.index, whole.data.text); // the term is past the fold
      }
      await this.showPage(found.offset, found.index);
    } catch (error) {
      setText(this.caption, `Could not look for “${term}”: ${reason(error)}`);
    }
  }

  private readonly exact: HTMLInputElement;
  private readonly summary: HTMLElement;
  private readonly caption: HTMLElement;
  private readonly pager: HTMLElement;
  private readonly transcript: HTMLOListElement;
  private readonly full = new Map<number, string>();
  private page: IPage | null = null;
}
