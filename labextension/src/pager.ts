/**
 * Paging controls: to the start, back, "Page [n] of N", on, to the end. Every control has an
 * accessible name; the page field takes a number and Enter.
 */
import { button } from './dom';
import { el } from './views/dom';
import { number } from './views/format';
import { pageButtons, pageCount } from './views/paging';
import { phraseAround } from './views/vocabulary';

/** The panel's lists, a page at a time: the message list and the search results. */
export const PAGE_SIZE = 20;

export interface IPagerOptions {
  total: number;
  offset: number;
  size: number;
  /** What is paged and in which order: a key of `wording.PAGERS` ("newest first", "results"). */
  pager: string;
  go: (offset: number) => void;
}

/** A navigation bar for `options` (`data-key`s let the caller keep focus across redraws). */
export function pager(options: IPagerOptions): HTMLElement {
  const { total, offset, size, go } = options;
  const { what, buttons } = pageButtons(options.pager);
  const pages = pageCount(total, size);
  const current = Math.floor(offset / size) + 1;
  const nav = el('nav', 'jp-nbmemory-pager', undefined, { 'aria-label': `Pages of ${what}` });
  const make = (at: number, key: string, page: number, disabled: boolean) => {
    const node = button(buttons[at], buttons[at], () => go((page - 1) * size));
    node.dataset.key = key;
    node.disabled = disabled;
    return node;
  };
  const field = el('input', 'jp-mod-styled jp-nbmemory-page-input', undefined, {
    type: 'number',
    min: '1',
    max: String(pages),
    value: String(current),
    'data-key': 'page',
    'data-testid': 'nbmemory-page-input'
  });
  const jump = () => {
    const page = Math.round(Number(field.value));
    if (Number.isFinite(page) && page >= 1 && page <= pages) {
      go((page - 1) * size);
    } else {
      field.value = String(current);
      field.setCustomValidity(`A page from 1 to ${pages}`);
      field.reportValidity();
    }
  };
  field.addEventListener('keydown', event => {
    if (event.key === 'Enter') {
      event.preventDefault();
      jump();
    }
  });
  field.addEventListener('change', () => field.setCustomValidity(''));
  const label = el('label', 'jp-nbmemory-page-label');
  const [before, after] = phraseAround('page', 'page', { pages: number(pages) });
  label.append(before, field, after); // "Page [n] of N", as the widget says it
  nav.append(
    make(0, 'start', 1, current <= 1),
    make(1, 'back', current - 1, current <= 1),
    label,
    make(2, 'on', current + 1, current >= pages),
    make(3, 'end', pages, current >= pages)
  );
  nav.hidden = pages <= 1;
  return nav;
}

/**
 * Run `draw`, which replaces what is inside `container`, and put the focus back on the element
 * with the same `data-key` if it was inside before (so a poll never takes the focus away).
 */
export function keepingFocus(container: HTMLElement, draw: () => void): void {
  const active = document.activeElement as HTMLElement | null;
  const key = active && container.contains(active) ? active.dataset.key : undefined;
  draw();
  if (key !== undefined) {
    const again = container.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`);
    again?.focus();
  }
}
