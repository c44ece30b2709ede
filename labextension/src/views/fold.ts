/**
 * A folded message: the views get a long message's first characters (`wording.FOLD_CHARS`) and
 * say so under it, beside a button that loads the rest.
 */
import { el } from './dom';
import { number } from './format';
import { phrase } from './vocabulary';

/**
 * The note under a folded message: how much of its `length` characters is `shown`, then `more`
 * (the view's button that loads the rest). `className` is the note's class, and with `-text` its
 * words'.
 */
export function foldNote(
  shown: number,
  length: number,
  more: HTMLElement,
  className: string,
  attrs: Record<string, string> = {}
): HTMLDivElement {
  const note = el('div', className, undefined, attrs);
  note.append(
    el(
      'span',
      `${className}-text`,
      phrase('folded', { shown: number(shown), length: number(length) })
    ),
    ' ',
    more
  );
  return note;
}
