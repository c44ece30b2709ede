/** Paging maths every paged list shares: how many pages, and a wanted page kept within them. */

/** The pages `total` items fill at `size` a page: at least one, even for none. */
export function pageCount(total: number, size: number): number {
  return Math.max(1, Math.ceil(total / Math.max(1, size)));
}

/** Page `page` (from 0) moved within the `count` pages there are. */
export function pageWithin(page: number, count: number): number {
  return Math.min(Math.max(0, page), count - 1);
}
