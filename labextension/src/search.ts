/**
 * The panel's search: a form of its own (the field, "archives too"), and its results, a
 * section apart from the message list with a hit count and pages. Its cards are
 * `MessageCards'`, with the matches marked.
 */
import type { IPage } from './api';
import { MessageCards, PagedCards } from './cards';
import { button } from './dom';
import { el, setText } from './views/dom';
import { counted, number } from './views/format';
import { label, phrase } from './views/vocabulary';

/** What a search found, as every view says it (`wording.search_words`). */
export function searchWords(
  query: string,
  total: number,
  offset: number,
  shown: number,
  archives: boolean,
  role: string
): string {
  const where = phrase(archives ? 'search where archives' : 'search where');
  const among = role ? phrase('search among', { role }) : '';
  if (!total) {
    const hint = archives ? '' : phrase('search hint');
    return phrase('search none', { query, where, among, hint });
  }
  return phrase('search found', {
    messages: counted(total, 'message'),
    query,
    where,
    among,
    first: number(offset + 1),
    last: number(offset + shown)
  });
}

/** The search shown above the message list. */
export interface ISearchView {
  query: string;
  archives: boolean;
  offset: number;
}

export class SearchSection extends PagedCards<ISearchView> {
  /** `changed()` is called when the search shown changes. */
  constructor(cards: MessageCards, changed: () => void) {
    super(cards, 'Search results', 'nbmemory-search-results', changed);
    this.input = el('input', 'jp-mod-styled jp-nbmemory-search-input', undefined, {
      type: 'search',
      placeholder: `${label('search placeholder', 'Search messages')} (Enter)`,
      'aria-label': 'Search messages',
      'data-testid': 'nbmemory-search'
    });
    this.archivesToo = el('input', '', undefined, { type: 'checkbox' });
    const archivesToo = el('label', 'jp-nbmemory-archives-too');
    archivesToo.append(this.archivesToo, ' archives too');
    this.form = el('form', 'jp-nbmemory-search', undefined, { role: 'search' });
    this.form.append(this.input, archivesToo);
    this.form.addEventListener('submit', event => {
      event.preventDefault();
      this.run(this.input.value);
    });
    this.title = el('h4', 'jp-nbmemory-section-title', 'Search results');
    this.caption = el('div', 'jp-nbmemory-caption', '', {
      role: 'status',
      'data-testid': 'nbmemory-search-caption'
    });
    const closeSearch = button(
      'Close search',
      'Close the search results',
      () => this.close(),
      'Close search'
    );
    const searchHead = el('div', 'jp-nbmemory-section-bar');
    searchHead.append(this.title, closeSearch);
    this.node = el('section', 'jp-nbmemory-search-results', undefined, {
      'aria-label': 'Search results',
      'data-testid': 'nbmemory-search-section'
    });
    this.node.append(searchHead, this.caption, this.pager, this.list);
    this.node.hidden = true;
  }

  /** The search form (the field and "archives too"). */
  readonly form: HTMLFormElement;
  /** The results. */
  readonly node: HTMLElement;
  /** "archives too": whether a new search looks in the archives. */
  readonly archivesToo: HTMLInputElement;
  /** The search shown, if any. */
  view: ISearchView | null = null;

  /** No search, and "archives too" as `archives` (another agent was selected). */
  reset(archives: boolean): void {
    this.input.value = '';
    this.view = null;
    this.archivesToo.checked = archives;
  }

  /** Put the focus in the search field. */
  focus(): void {
    this.input.focus();
    this.input.select();
  }

  /** The results: `found`, for the search shown, among the messages of `role` (or all). */
  render(found: IPage | null, role: string): void {
    const view = this.view;
    this.node.hidden = !view || !found;
    if (!view || !found) {
      this.items = [];
      return;
    }
    this.items = found.items;
    const { total, offset, items } = found;
    setText(this.title, `Search results for “${view.query}”`);
    setText(
      this.caption,
      searchWords(view.query, total, offset, items.length, view.archives, role)
    );
    this.node.dataset.total = String(total);
    this.total = total;
    this.showPager({
      offset,
      pager: 'results',
      go: at => this.go({ ...view, offset: at })
    });
  }

  private run(text: string): void {
    const q = text.trim();
    if (!q) {
      this.close();
      return;
    }
    this.go({ query: q, archives: this.archivesToo.checked, offset: 0 });
  }

  private close(): void {
    this.input.value = '';
    this.view = null;
    this.changed();
    this.input.focus();
  }

  private readonly input: HTMLInputElement;
  private readonly title: HTMLElement;
  private readonly caption: HTMLElement;
}
