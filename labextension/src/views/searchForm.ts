/**
 * The search form of every view: the field and "archives too". Enter searches for what the field
 * holds; ticking or clearing "archives too" searches again while a search is shown; an emptied
 * field ends the search. What was found is each frame's to show.
 */
import { el } from './dom';
import { label } from './vocabulary';

export interface ISearchForm {
  /** The form, to place in the frame. */
  readonly node: HTMLFormElement;
  /** Show `query` (unless someone is typing in the field) and `archives`. */
  show(query: string, archives: boolean): void;
  /** Put the focus in the field, its text selected. */
  focus(): void;
}

export interface ISearchActions {
  /** A search for `query` was asked for, in the archives too if `archives`; '' ends it. */
  search(query: string, archives: boolean): void;
  /** Whether a search is shown: "archives too" searches again only then. */
  shown(): boolean;
  /** "archives too" changed while no search is shown: the next search's choice. */
  archives(checked: boolean): void;
}

/** A search form that tells `actions` what a person asks of it. */
export function searchForm(actions: ISearchActions): ISearchForm {
  const { search, shown } = actions;
  const words = label('search placeholder', 'Search messages');
  const input = el('input', 'jp-mod-styled jp-nbmemory-search-input', undefined, {
    type: 'search',
    placeholder: `${words} (Enter)`,
    'aria-label': words,
    'data-testid': 'nbmemory-search'
  });
  const archivesToo = el('input', '', undefined, {
    type: 'checkbox',
    'data-testid': 'nbmemory-search-archives'
  });
  const archivesLabel = el('label', 'jp-nbmemory-archives-too');
  archivesLabel.append(archivesToo, ' archives too');
  const node = el('form', 'jp-nbmemory-search', undefined, { role: 'search' });
  node.append(input, archivesLabel);
  // Enter is handled on the field, as the page field does: in a notebook's output, the form was
  // not submitted on Enter.
  node.addEventListener('submit', event => event.preventDefault());
  input.addEventListener('keydown', event => {
    if (event.key === 'Enter') {
      event.preventDefault();
      search(input.value.trim(), archivesToo.checked);
    }
  });
  input.addEventListener('input', () => {
    if (!input.value.trim() && shown()) {
      search('', archivesToo.checked);
    }
  });
  archivesToo.addEventListener('change', () => {
    if (shown()) {
      search(input.value.trim(), archivesToo.checked);
    } else {
      actions.archives(archivesToo.checked);
    }
  });
  return {
    node,
    show(query: string, archives: boolean) {
      archivesToo.checked = archives;
      if (document.activeElement !== input) {
        input.value = query;
      }
    },
    focus() {
      input.focus();
      input.select();
    }
  };
}
