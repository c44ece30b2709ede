/**
 * Small DOM helpers. Text always goes in as text nodes (`textContent`, `createTextNode`): no
 * helper here ever parses HTML, so untrusted text cannot become elements.
 */

/** A DOM element with a class, optional text and attributes. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string,
  attrs: Record<string, string> = {}
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  for (const [key, value] of Object.entries(attrs)) {
    node.setAttribute(key, value);
  }
  return node;
}

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

/** The note under a folded message: how much is shown, and a button that loads the rest. */
export function foldNote(shown: number, length: number, showFull: () => void): HTMLDivElement {
  const note = el('div', 'jp-nbmemory-fold');
  note.append(
    el(
      'span',
      'jp-nbmemory-fold-text',
      `Showing ${number(shown)} of ${number(length)} characters.`
    ),
    button('Show full text', 'Load the whole message', showFull)
  );
  return note;
}

export const number = (n: number): string => n.toLocaleString();
export const plural = (n: number, word: string): string =>
  `${number(n)} ${word}${n === 1 ? '' : 's'}`;
export const percent = (fraction: number): string => `${Math.round(fraction * 1000) / 10}%`;

/** Where `term` occurs in `text`, as [start, end) pairs. */
type Finder = (text: string) => [number, number][];

/** Case-insensitive occurrences of `needle` (the server's search matches any case too). */
export function anyCase(needle: string): Finder {
  const folded = needle.toLowerCase();
  return text => {
    const found: [number, number][] = [];
    if (!folded) {
      return found;
    }
    const haystack = text.toLowerCase();
    // Lower-casing can change a string's length (rare letters): then no offsets are trusted.
    if (haystack.length !== text.length) {
      return found;
    }
    let at = haystack.indexOf(folded);
    while (at !== -1) {
      found.push([at, at + folded.length]);
      at = haystack.indexOf(folded, at + folded.length);
    }
    return found;
  };
}

const WORD = /[\p{L}\p{N}_]/u;

/** Whole-word occurrences of `term`, as written (a dropped term is a word of the transcript). */
export function wholeWord(term: string): Finder {
  return text => {
    const found: [number, number][] = [];
    if (!term) {
      return found;
    }
    let at = text.indexOf(term);
    while (at !== -1) {
      const before = at > 0 ? text[at - 1] : '';
      const after = text[at + term.length] ?? '';
      if (!WORD.test(before) && !WORD.test(after)) {
        found.push([at, at + term.length]);
      }
      at = text.indexOf(term, at + 1);
    }
    return found;
  };
}

/**
 * Wrap what `finders` find in the text under `root` in `<mark class=className>` elements,
 * splitting text nodes (never touching HTML): returns how many marks were made. Each finder's
 * marks carry its key as `data-term`. Occurrences split across elements are not marked.
 */
export function markText(
  root: HTMLElement,
  finders: [string, Finder][],
  className: string
): number {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!(node.parentElement?.closest('mark') ?? null)) {
      nodes.push(node as Text);
    }
  }
  let made = 0;
  for (const node of nodes) {
    const text = node.data;
    const spans: [number, number, string][] = [];
    for (const [key, find] of finders) {
      for (const [start, end] of find(text)) {
        if (!spans.some(([s, e]) => start < e && s < end)) {
          spans.push([start, end, key]);
        }
      }
    }
    if (!spans.length) {
      continue;
    }
    spans.sort((a, b) => a[0] - b[0]);
    const pieces: Node[] = [];
    let at = 0;
    for (const [start, end, key] of spans) {
      if (start > at) {
        pieces.push(document.createTextNode(text.slice(at, start)));
      }
      const mark = el('mark', className, text.slice(start, end), { 'data-term': key });
      pieces.push(mark);
      at = end;
      made++;
    }
    if (at < text.length) {
      pieces.push(document.createTextNode(text.slice(at)));
    }
    node.replaceWith(...pieces);
  }
  return made;
}
