/**
 * A compaction opened from the panel's timeline, in the main area: the views' compaction head
 * (its line, dropped terms, summary and Back) beside the transcript it replaced (the archive, a
 * page at a time), each dropped term (a name, number, date or identifier of the transcript that
 * neither the summary nor the pinned notes hold) marked in the transcript.
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
import { CompactionHead, backOnEscape } from './views/compactionHead';
import { TextRenderer } from './render';
import { label, messageNumber } from './views/vocabulary';

const PAGE_SIZE = 20;

/**
 * A compaction in the main area: its head (left) beside the transcript it replaced (right,
 * paged); Back and Escape close it.
 */
export class CompactionView extends Widget {
  constructor(
    private readonly api: Api,
    private readonly renderer: TextRenderer,
    readonly agent: string,
    readonly compaction: ICompaction,
    position: number,
    count: number,
    onBack: () => void,
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

    this.head = new CompactionHead(
      {
        render: (body, text) => this.renderer.render(body, text, this.exact.checked),
        find: term => void this.find(term),
        back: onBack
      },
      'jp-nbmemory-dropped-mark'
    );
    this.head.node.classList.add('jp-nbmemory-view-column');
    this.exact = el('input', '', undefined, { type: 'checkbox' });
    this.exact.addEventListener('change', () => void this.renderAll());
    this.caption = el('span', 'jp-nbmemory-caption', '', { role: 'status' });
    this.pager = el('div', 'jp-nbmemory-viewbar');
    this.transcript = el('ol', 'jp-nbmemory-messages', undefined, {
      'aria-label': 'Transcript replaced',
      'data-testid': 'nbmemory-transcript'
    });
    const columns = el('div', 'jp-nbmemory-view-columns');
    columns.append(this.head.node, this.transcriptColumn());
    this.node.append(columns);
    backOnEscape(this.node, () => true, onBack);
    void this.head.show(compaction, position, count);
  }

  /** The transcript it replaced: its title, "Exact text", the pager and the cards. */
  private transcriptColumn(): HTMLElement {
    const exactLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: 'Show the summary and the transcript exactly as stored, with no Markdown'
    });
    exactLabel.append(this.exact, ' Exact text');
    const column = el('section', 'jp-nbmemory-view-column', undefined, {
      'aria-label': 'Transcript replaced'
    });
    column.append(
      el(
        'h3',
        'jp-nbmemory-section-title',
        label('transcript', 'Transcript it replaced (the archive)')
      ),
      exactLabel,
      this.pager,
      this.transcript
    );
    return column;
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
    await this.head.rerender();
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

  private readonly head: CompactionHead;
  private readonly exact: HTMLInputElement;
  private readonly caption: HTMLElement;
  private readonly pager: HTMLElement;
  private readonly transcript: HTMLOListElement;
  private readonly full = new Map<number, string>();
  private page: IPage | null = null;
}
