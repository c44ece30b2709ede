/**
 * The panel's search: the views' search form (`views/searchForm.ts`), and its results, a
 * section apart from the message list with a hit count and pages. Its cards are
 * `MessageCards'`, with the matches marked.
 */
import type { IPage } from './api';
import { MessageCards, PagedCards } from './cards';
import { button } from './dom';
import { el, setText } from './views/dom';
import { counted, number } from './views/format';
import { ISearchForm, searchForm } from './views/searchForm';
import { phrase } from './views/vocabulary';

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
    this.searchForm = searchForm({
      search: (query, archives) => {
        this.archives = archives;
        if (query) {
          this.go({ query, archives, offset: 0 });
        } else {
          this.close();
        }
      },
      shown: () => this.view !== null,
      archives: checked => {
        this.archives = checked;
      }
    });
    this.form = this.searchForm.node;
    this.title = el('h4', 'jp-nbmemory-section-title', 'Search results');
    this.caption = el('div', 'jp-nbmemory-caption', '', {
      role: 'status',
      'data-testid': 'nbmemory-search-caption'
    });
    const closeSearch = button(
      'Close search',
      'Close the search results',
      () => {
        this.close();
        this.searchForm.focus();
      },
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
  /** The search shown, if any. */
  view: ISearchView | null = null;

  /** "archives too" as `archives` for the next search, unless a search is shown. */
  set archivesDefault(archives: boolean) {
    if (!this.view) {
      this.archives = archives;
      this.searchForm.show('', archives);
    }
  }

  /** No search, and "archives too" as `archives` (another agent was selected). */
  reset(archives: boolean): void {
    this.view = null;
    this.archives = archives;
    this.searchForm.show('', archives);
  }

  /** Put the focus in the search field. */
  focus(): void {
    this.searchForm.focus();
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

  private close(): void {
    this.view = null;
    this.searchForm.show('', this.archives);
    this.changed();
  }

  private readonly searchForm: ISearchForm;
  private archives = false;
  private readonly title: HTMLElement;
  private readonly caption: HTMLElement;
}
