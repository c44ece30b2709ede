/**
 * The panel's message list: MEMORY.md or one archive of the selected agent, filtered by role, a
 * page at a time, in the order the settings choose. Its cards are `MessageCards`'.
 */
import type { IPage } from './api';
import { MessageCards, PagedCards } from './cards';
import { button } from './dom';
import { el, keepingFocus } from './views/dom';
import { number } from './views/format';
import { listCaption } from './views/paging';
import { label } from './views/vocabulary';

/** The message list: MEMORY.md or one archive, a page at a time, maybe one role only. */
export interface IListView {
  archive: string | null;
  offset: number;
  role: string;
}

/** A page of the message list, with the roles of its file and how many messages each has. */
export interface IRolePage extends IPage {
  roles?: { role: string; count: number }[];
}

export class MessageList extends PagedCards<IListView> {
  /** `changed()` is called when the view changes; `showMemory()` goes back to MEMORY.md. */
  constructor(cards: MessageCards, changed: () => void, showMemory: () => void) {
    super(cards, 'Messages', 'nbmemory-messages', changed);
    this.title = el('h4', 'jp-nbmemory-section-title', 'Memory');
    this.backToMemory = button(
      label('back', 'Back to the memory'),
      'Show the live memory (MEMORY.md)',
      showMemory,
      label('back', 'Back to the memory')
    );
    this.backToMemory.hidden = true;
    this.roleSelect = el('select', 'jp-mod-styled jp-nbmemory-role', undefined, {
      'aria-label': 'Show the messages of one role',
      'data-testid': 'nbmemory-role'
    });
    this.roleSelect.addEventListener('change', () =>
      this.go({ ...this.view, role: this.roleSelect.value, offset: 0 })
    );
    this.caption = el('div', 'jp-nbmemory-caption', '', {
      'data-testid': 'nbmemory-list-caption'
    });
    const listHead = el('div', 'jp-nbmemory-section-bar');
    listHead.append(this.title, this.backToMemory);
    const listBar = el('div', 'jp-nbmemory-viewbar');
    listBar.append(this.caption, this.roleSelect);
    this.node = el('section', 'jp-nbmemory-list', undefined, {
      'aria-label': 'Messages',
      'data-testid': 'nbmemory-list-section'
    });
    this.node.append(listHead, listBar, this.pager, this.list);
  }

  readonly node: HTMLElement;
  /** What the list shows. */
  view: IListView = { archive: null, offset: 0, role: '' };

  /** The caption, the role filter and the pager for `page`, in the order chosen. */
  render(page: IRolePage, newestFirst: boolean): void {
    const list = this.view;
    this.total = page.total;
    this.items = page.items;
    this.title.textContent = list.archive ? `Archive ${list.archive}` : 'Memory (MEMORY.md)';
    this.backToMemory.hidden = list.archive === null;
    const { offset, items } = page;
    this.caption.textContent = listCaption(items, page.total, list.role, newestFirst);
    // Roles: the file's, with counts; the chosen one stays even when it has none left.
    const roles = page.roles ?? [];
    const options = [el('option', '', 'All roles', { value: '' })];
    for (const { role: name, count } of roles) {
      options.push(el('option', '', `${name} (${number(count)})`, { value: name }));
    }
    if (list.role && !roles.some(r => r.role === list.role)) {
      options.push(el('option', '', `${list.role} (0)`, { value: list.role }));
    }
    keepingFocus(this.roleSelect.parentElement!, () => {
      this.roleSelect.replaceChildren(...options);
      this.roleSelect.value = list.role;
    });
    this.showPager({
      offset,
      pager: newestFirst ? 'newest first' : 'oldest first',
      go: at => this.go({ ...this.view, offset: at })
    });
  }

  private readonly title: HTMLElement;
  private readonly backToMemory: HTMLButtonElement;
  private readonly roleSelect: HTMLSelectElement;
  private readonly caption: HTMLElement;
}
