/**
 * The page controls of every paged list, in the panel and the widget alike: to the start, back,
 * "Page [n] of N", on, to the end. Each button shows and is named by its label and what is paged
 * ("Older messages"); the page field is named by the words around it and takes a number and
 * Enter. The frames only say which page is shown and what `go` does.
 */
import { el } from './dom';
import { number } from './format';
import { pageButtons } from './paging';
import { phraseAround } from './vocabulary';

export interface IPageControls {
  /** The page shown, from 1, of `pages` (at least 1). */
  page: number;
  pages: number;
  /** What is paged and in which order: a key of `wording.PAGERS` ("newest first", "results"). */
  pager: string;
  /** Turn to `page` (from 1, within the pages). */
  go: (page: number) => void;
}

/**
 * The navigation bar for `options`, hidden when there is one page. `data-key`s let a redraw keep
 * the focus (`keepingFocus`), and a button that turned the page to its end hands it to the field.
 */
export function pageControls(options: IPageControls): HTMLElement {
  const { page, pages, go } = options;
  const { what, buttons } = pageButtons(options.pager);
  const nav = el('nav', 'jp-nbmemory-pager', undefined, { 'aria-label': `Pages of ${what}` });
  const make = (at: number, key: string, to: number, disabled: boolean) => {
    const node = el('button', 'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button', buttons[at], {
      type: 'button',
      title: buttons[at],
      'data-key': key,
      'data-focus-instead': 'page',
      'data-testid': `nbmemory-page-${key}`
    });
    node.disabled = disabled;
    node.addEventListener('click', () => go(to));
    return node;
  };
  const field = el('input', 'jp-mod-styled jp-nbmemory-page-input', undefined, {
    type: 'number',
    min: '1',
    max: String(pages),
    step: '1',
    inputmode: 'numeric',
    value: String(page),
    'data-key': 'page',
    'data-testid': 'nbmemory-page-input'
  });
  field.addEventListener('keydown', event => {
    if (event.key !== 'Enter') {
      return;
    }
    event.preventDefault();
    const wanted = Math.round(Number(field.value));
    if (Number.isFinite(wanted) && wanted >= 1 && wanted <= pages) {
      go(wanted);
    } else {
      field.value = String(page);
      field.setCustomValidity(`A page from 1 to ${pages}`);
      field.reportValidity();
    }
  });
  field.addEventListener('input', () => field.setCustomValidity(''));
  const label = el('label', 'jp-nbmemory-page-label');
  const [before, after] = phraseAround('page', 'page', { pages: number(pages) });
  label.append(before, field, after);
  nav.append(
    make(0, 'start', 1, page <= 1),
    make(1, 'back', page - 1, page <= 1),
    label,
    make(2, 'on', page + 1, page >= pages),
    make(3, 'end', pages, page >= pages)
  );
  nav.hidden = pages <= 1;
  return nav;
}
