/**
 * The panel's DOM helpers beside the views' `el`: its buttons, list keys and folded messages.
 * Text always goes in as text nodes (`textContent`, `createTextNode`): no helper here ever
 * parses HTML, so untrusted text cannot become elements.
 */
import { el } from './views/dom';
import { foldNote } from './views/fold';
import { label } from './views/vocabulary';

/**
 * A JupyterLab button (`@jupyterlab/ui-components`' `jp-Button`, small): `label` is its text,
 * `title` its tooltip and, unless `name` says otherwise, its accessible name's description.
 */
export function button(
  label: string,
  title: string,
  onClick: () => void,
  name?: string
): HTMLButtonElement {
  const node = el('button', 'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button', label, {
    type: 'button',
    title
  });
  if (name) {
    node.setAttribute('aria-label', name);
  }
  node.addEventListener('click', onClick);
  return node;
}

/**
 * Where arrow keys, Home and End move in a list of `count` items from `at` (-1 when none has
 * focus), or -1 for any other key: the one key handling every list of the views shares.
 */
export function listMove(key: string, at: number, count: number): number {
  switch (key) {
    case 'ArrowDown':
      return Math.min(count - 1, at + 1);
    case 'ArrowUp':
      return Math.max(0, at - 1);
    case 'Home':
      return 0;
    case 'End':
      return count - 1;
    default:
      return -1;
  }
}

/** The panel's note under a folded message (the views' `foldNote`) and its button. */
export function panelFoldNote(
  shown: number,
  length: number,
  showFull: () => void
): HTMLDivElement {
  const more = button(label('show full', 'Show full text'), 'Load the whole message', showFull);
  return foldNote(shown, length, more, 'jp-nbmemory-fold');
}
