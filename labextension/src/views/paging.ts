/**
 * Paging every paged list shares: how many pages, a wanted page kept within them, the page
 * buttons' words, and which messages a page shows.
 */
import { counted } from './format';
import { messageNumber, pagerLabels } from './vocabulary';

/** The pages `total` items fill at `size` a page: at least one, even for none. */
export function pageCount(total: number, size: number): number {
  return Math.max(1, Math.ceil(total / Math.max(1, size)));
}

/** Page `page` (from 0) moved within the `count` pages there are. */
export function pageWithin(page: number, count: number): number {
  return Math.min(Math.max(0, page), count - 1);
}

/**
 * The messages a page shows, by the numbers their cards carry, first to last as listed: "#20–#1"
 * on the oldest page of 10,000 messages newest first, never "9,981–10,000".
 */
export function shownNumbers(items: { index: number }[]): string {
  const first = messageNumber(items[0].index);
  const last = messageNumber(items[items.length - 1].index);
  return first === last ? first : `${first}–${last}`;
}

/**
 * The four page buttons of `pager` (a key of `wording.PAGERS`: "newest first", "oldest first",
 * "results"), to the start, back, on and to the end, and `what` it pages. Each button shows and
 * is named by its label and what is paged ("Older messages", "Last results"): a screen reader
 * says what is seen, in every view alike.
 */
export function pageButtons(pager: string): { what: string; buttons: string[] } {
  const what = pager === 'results' ? 'results' : 'messages';
  return { what, buttons: pagerLabels(pager).map(label => `${label} ${what}`) };
}

/**
 * What a page of a message list shows, said the same in every view: "#20–#1 of 10,000
 * messages, newest first", "… by Finder" for one role's, "No messages." for none.
 */
export function listCaption(
  items: { index: number }[],
  total: number,
  role: string,
  newestFirst: boolean
): string {
  if (!items.length) {
    return role ? `No messages by ${role}.` : 'No messages.';
  }
  const by = role ? ` by ${role}` : '';
  return `${shownNumbers(items)} of ${counted(total, 'message')}${by}, ${newestFirst ? 'newest' : 'oldest'} first`;
}
