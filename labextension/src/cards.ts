/**
 * Message cards, as the panel's message list and its search results show them: role, index,
 * time and file, the text (sanitized Markdown, or exact with "Exact text"), what the message
 * adds to a request (with "Tokens per message"), and "Show full text" for a folded one. A list
 * of cards has one tab stop; arrow keys, Home and End move in it, Page Up and Page Down turn
 * its page.
 */
import { Api, IItem, IMessageTokens, agentPath, query, reason } from './api';
import { CellOpener, cellLine } from './cells';
import { listMove } from './dom';
import { el, keepingFocus } from './views/dom';
import { counted } from './views/format';
import { anyCase } from './views/marks';
import { pageControls } from './views/pager';
import { pageCount } from './views/paging';
import { IToolMessage, messageCard } from './views/message';
import { label } from './views/vocabulary';
import { IMessageRef, MEMORY_FILE } from './targets';

/** The panel's lists, a page at a time: the message list and the search results. */
export const PAGE_SIZE = 20;

export interface ICardsOptions {
  api: Api;
  /** Where a failure to count tokens is said. */
  status: HTMLElement;
  /** The search shown, whose matches a card of the results marks. */
  searchQuery: () => string | null;
  /** "Exact text" was ticked or cleared. */
  exactChanged: () => void;
  /** "Tokens per message" was ticked or cleared. */
  tokensChanged: () => void;
  /** Goes to the notebook cell a message came from (none: its label is plain text). */
  openCell: CellOpener | null;
  /** Copies a message's whole stored text. */
  copy: (message: IMessageRef) => void;
}

/** A list of cards to fill: the list, its items, and the search matches to mark (or null). */
export type CardList = [HTMLOListElement, IItem[], string | null];

export class MessageCards {
  constructor(private readonly options: ICardsOptions) {
    this.exact.addEventListener('change', () => options.exactChanged());
    const exactLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: 'Show each message exactly as stored, with no Markdown'
    });
    exactLabel.append(this.exact, ' Exact text');
    this.showTokens.addEventListener('change', () => options.tokensChanged());
    const tokensLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: "Show what each message adds to a request, counted with the agent's encoding"
    });
    tokensLabel.append(this.showTokens, ' Tokens per message');
    this.labels = [exactLabel, tokensLabel];
  }

  /** "Exact text": messages (and notes) verbatim, with no Markdown. */
  readonly exact = el('input', '', undefined, {
    type: 'checkbox',
    'data-testid': 'nbmemory-exact'
  });
  /** "Tokens per message". */
  readonly showTokens = el('input', '', undefined, {
    type: 'checkbox',
    'data-testid': 'nbmemory-show-tokens'
  });
  /** The two checkboxes with their labels. */
  readonly labels: HTMLElement[];
  /** The agent whose messages the cards show. */
  agent = '';

  /** Forget the whole texts loaded with "Show full text". */
  clearFull(): void {
    this.full.clear();
  }

  /** Fill each list with cards for its items; a newer call makes an older one stop. */
  async render(lists: CardList[]): Promise<void> {
    const rendered = ++this.renderGeneration;
    await Promise.all(
      lists.map(([list, items, highlight]) => this.renderList(list, items, rendered, highlight))
    );
  }

  /**
   * An empty list of cards, named `label`. Arrow keys, Home and End move between its cards;
   * Page Up and Page Down turn its page (`current` view, `go` to another, `total` items) and
   * focus the new page's first card.
   */
  makeList<V extends { offset: number }>(
    label: string,
    testid: string,
    current: () => V | null,
    go: (view: V) => void,
    total: () => number
  ): HTMLOListElement {
    const list = el('ol', 'jp-nbmemory-messages', undefined, {
      'aria-label': label,
      'data-testid': testid
    });
    list.addEventListener('keydown', event => {
      const cards = Array.from(list.querySelectorAll<HTMLElement>('.jp-nbmemory-message'));
      const at = cards.indexOf(document.activeElement as HTMLElement);
      const view = current();
      if (event.key === 'PageDown' || event.key === 'PageUp') {
        if (!view) {
          return;
        }
        event.preventDefault();
        const step = event.key === 'PageDown' ? PAGE_SIZE : -PAGE_SIZE;
        const offset = view.offset + step;
        if (offset >= 0 && offset < total()) {
          this.focusFirstCardOf = list;
          go({ ...view, offset });
        }
        return;
      }
      const next = listMove(event.key, at, cards.length);
      if (at === -1 || next === -1 || !cards[next]) {
        return;
      }
      event.preventDefault();
      for (const card of cards) {
        card.tabIndex = -1;
      }
      cards[next].tabIndex = 0;
      cards[next].focus();
    });
    return list;
  }

  /** With "Tokens per message" on, ask the server what each shown message adds to a request. */
  async renderTokens(list: HTMLOListElement): Promise<void> {
    const cards = Array.from(list.querySelectorAll<HTMLElement>('.jp-nbmemory-message'));
    if (!this.showTokens.checked) {
      for (const card of cards) {
        const slot = card.querySelector<HTMLElement>('.jp-nbmemory-message-tokens');
        if (slot) {
          slot.textContent = '';
        }
      }
      return;
    }
    const name = this.agent;
    const bySource = new Map<string, HTMLElement[]>();
    for (const card of cards) {
      const source = card.dataset.source ?? MEMORY_FILE;
      bySource.set(source, [...(bySource.get(source) ?? []), card]);
    }
    for (const [source, group] of bySource) {
      try {
        const { data } = await this.options.api.get<IMessageTokens>(
          agentPath(name, 'tokens') +
            query({
              indexes: group.map(card => card.dataset.index).join(','),
              archive: source === MEMORY_FILE ? null : source
            })
        );
        if (name !== this.agent || !this.showTokens.checked) {
          return;
        }
        for (const card of group) {
          const count = data.tokens[card.dataset.index ?? ''];
          const slot = card.querySelector<HTMLElement>('.jp-nbmemory-message-tokens');
          if (slot && count !== undefined) {
            slot.textContent = counted(count, 'token');
            slot.title = `What this message adds to a request (${data.encoding})`;
            slot.dataset.tokens = String(count);
          }
        }
      } catch (error) {
        this.options.status.textContent = `Could not count tokens: ${reason(error)}`;
      }
    }
  }

  /** Fill `list` with cards for `items`; `highlight` marks the search's matches. */
  private async renderList(
    list: HTMLOListElement,
    items: IItem[],
    rendered: number,
    highlight: string | null
  ): Promise<void> {
    if (rendered !== this.renderGeneration) {
      return;
    }
    const cards = items.map(item => this.card(item, highlight));
    keepingFocus(list, () => {
      list.replaceChildren(...cards);
      // An empty search says so in its caption, once.
      if (!items.length && highlight === null) {
        list.append(el('li', 'jp-nbmemory-empty', label('empty', 'Nothing here.')));
      }
    });
    // One tab stop per list (the focused card, else the first); arrow keys move inside.
    const focused = cards.find(card => card === document.activeElement) ?? cards[0];
    if (focused) {
      focused.tabIndex = 0;
    }
    if (this.focusFirstCardOf === list && cards.length) {
      this.focusFirstCardOf = null; // a page turned from the keyboard: on to its first message
      cards.forEach((card, i) => (card.tabIndex = i === 0 ? 0 : -1));
      cards[0].focus();
    }
    await this.renderTokens(list);
  }

  /** The views' card for `item` (its whole text once loaded), in the panel's classes. */
  private card(item: IItem, highlight: string | null): HTMLElement {
    const exact = this.exact.checked;
    const card = messageCard(
      item,
      {
        classes: 'jp-nbmemory-',
        ids: 'nbmemory-',
        buttonClass: 'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button',
        exact,
        showSource: item.source !== MEMORY_FILE || highlight !== null,
        marks: highlight
          ? { finders: [[highlight, anyCase(highlight)]], className: 'hit' }
          : undefined,
        attrs: { 'data-agent': this.agent, 'data-key': `${item.source}#${item.index}` },
        cell: ({ provenance }) => cellLine(provenance!, this.options.openCell),
        copy: ({ source, index, role }) => this.options.copy({ agent: this.agent, source, index, role }),
        showFull: (whole, more) => void this.showFull(whole, more)
      },
      this.full.get(this.fullKey(item.source, item.index))
    );
    card.querySelector('.jp-nbmemory-content')?.classList.toggle('jp-RenderedMarkdown', !exact);
    return card;
  }

  /** Load the whole of a folded message, then draw its card again with it. */
  private async showFull(item: IItem, more: HTMLButtonElement): Promise<void> {
    const name = this.agent;
    const archive = item.source === MEMORY_FILE ? null : item.source;
    more.disabled = true;
    more.textContent = 'Loading the full text…';
    try {
      const { data } = await this.options.api.get<IItem>(
        agentPath(name, 'messages', String(item.index)) + query({ archive })
      );
      if (name !== this.agent) {
        return;
      }
      this.full.set(this.fullKey(item.source, item.index), { text: data.text, tool: data.tool });
      const card = more.closest<HTMLElement>('.jp-nbmemory-message');
      const inSearch = card?.closest('.jp-nbmemory-search-results');
      const again = this.card(item, inSearch ? this.options.searchQuery() : null);
      again.tabIndex = card?.tabIndex ?? -1;
      card?.replaceWith(again);
      await this.renderTokens(again.parentElement as HTMLOListElement);
    } catch (error) {
      more.disabled = false;
      more.textContent = `Could not load it: ${reason(error)}`;
    }
  }

  private fullKey(source: string, index: number): string {
    return `${this.agent}\u0000${source}\u0000${index}`;
  }

  /** Whole texts loaded with "Show full text", by agent, file and index. */
  private readonly full = new Map<string, { text: string; tool: IToolMessage | null }>();
  private renderGeneration = 0;
  private focusFirstCardOf: HTMLOListElement | null = null;
}

/**
 * A section of the panel with a list of cards, a page at a time (the message list, the search
 * results): what it shows (`view`), the items of the page shown and their total, its pager.
 */
export abstract class PagedCards<V extends { offset: number }> {
  /** A list named `label`; `changed()` is called when the view changes. */
  constructor(
    cards: MessageCards,
    label: string,
    testid: string,
    protected readonly changed: () => void
  ) {
    this.list = cards.makeList(
      label,
      testid,
      () => this.view,
      v => this.go(v),
      () => this.total
    );
  }

  abstract view: V | null;
  readonly list: HTMLOListElement;
  /** How many items the pages go through, and those of the page shown. */
  total = 0;
  items: IItem[] = [];

  /** Show `view` (from the next refresh on). */
  go(view: V): void {
    this.view = view;
    this.changed();
  }

  /** The pager at `offset`: what it pages in which order (`pager`), `go` to an offset. */
  protected showPager(options: { offset: number; pager: string; go: (offset: number) => void }): void {
    const { offset, pager, go } = options;
    const page = Math.floor(offset / PAGE_SIZE) + 1;
    const pages = pageCount(this.total, PAGE_SIZE);
    keepingFocus(this.pager, () =>
      this.pager.replaceChildren(
        pageControls({ page, pages, pager, go: to => go((to - 1) * PAGE_SIZE) })
      )
    );
  }

  protected readonly pager = el('div', 'jp-nbmemory-pager-slot');
}
