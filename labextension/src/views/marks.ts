/**
 * Marks over text already shown: search hits and dropped terms, in the panel and the widget
 * alike. Only text nodes are split and only `<mark>` elements are added: the text itself is
 * never parsed as HTML.
 */
import { el } from './dom';

/** Where `term` occurs in `text`, as [start, end) pairs. */
export type Finder = (text: string) => [number, number][];

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

const WORD = /[\p{L}\p{N}]/u;

/**
 * Whole-word occurrences of `term` in any case (a dropped term is a word of the transcript; the
 * widget marks the same: any case, not inside a longer word or number, "1" not in "4471").
 */
export function wholeWord(term: string): Finder {
  const folded = term.toLowerCase();
  return text => {
    const found: [number, number][] = [];
    const haystack = text.toLowerCase();
    // Lower-casing can change a string's length (rare letters): then no offsets are trusted.
    if (!folded || haystack.length !== text.length) {
      return found;
    }
    let at = haystack.indexOf(folded);
    while (at !== -1) {
      const before = at > 0 ? text[at - 1] : '';
      const after = text[at + folded.length] ?? '';
      if (!WORD.test(before) && !WORD.test(after)) {
        found.push([at, at + folded.length]);
      }
      at = haystack.indexOf(folded, at + 1);
    }
    return found;
  };
}

/** Elements within a line of text, which a term can run through (`<strong>ACME</strong>-42`). */
const INLINE = new Set([
  'A',
  'ABBR',
  'B',
  'CITE',
  'CODE',
  'DEL',
  'DFN',
  'EM',
  'I',
  'INS',
  'KBD',
  'Q',
  'S',
  'SAMP',
  'SMALL',
  'SPAN',
  'STRONG',
  'SUB',
  'SUP',
  'TIME',
  'U',
  'VAR'
]);

/** The nearest element around `node`, up to `root`, that is not inline: its line's block. */
function blockOf(node: Node, root: HTMLElement): Node {
  let at = node.parentNode;
  while (at && at !== root && at instanceof Element && INLINE.has(at.tagName)) {
    at = at.parentNode;
  }
  return at ?? root;
}

/**
 * The text nodes under `root` in runs that read as one piece of text: a run goes on through
 * inline elements and ends at anything else (a block, a line break, an image), at another
 * block, and at text already marked (which is left out).
 */
function textRuns(root: HTMLElement): Text[][] {
  const runs: Text[][] = [];
  let run: Text[] = [];
  let block: Node | null = null;
  const end = () => {
    if (run.length) {
      runs.push(run);
    }
    run = [];
  };
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!(node instanceof Text)) {
      if (!(node instanceof Element && INLINE.has(node.tagName))) {
        end();
      }
    } else if (node.parentElement?.closest('mark')) {
      end();
    } else {
      const home = blockOf(node, root);
      if (home !== block) {
        end();
        block = home;
      }
      run.push(node);
    }
  }
  end();
  return runs;
}

/**
 * Wrap what `finders` find in the text under `root` in `<mark class=className>` elements,
 * splitting text nodes (never touching HTML): returns how many occurrences were marked. Each
 * finder's marks carry its key as `data-term`. An occurrence may run through inline elements
 * (`**ACME**-42` rendered is `<strong>ACME</strong>-42`): it is then marked piece by piece, a
 * `<mark>` in each text node it covers, and counted once. Blocks and line breaks end it.
 * Where two occurrences overlap, the longer is marked ("ACME-42" rather than its "ACME").
 */
export function markText(
  root: HTMLElement,
  finders: [string, Finder][],
  className: string
): number {
  let made = 0;
  for (const run of textRuns(root)) {
    const text = run.map(node => node.data).join('');
    const spans = spansIn(text, finders);
    if (!spans.length) {
      continue;
    }
    made += spans.length;
    let from = 0; // where the node's text starts in the run's
    for (const node of run) {
      const to = from + node.data.length;
      const inside = spans
        .filter(([start, end]) => start < to && from < end)
        .map(([start, end, key]): [number, number, string] => [
          Math.max(start, from) - from,
          Math.min(end, to) - from,
          key
        ]);
      if (inside.length) {
        node.replaceWith(...marked(node.data, inside, className));
      }
      from = to;
    }
  }
  return made;
}

/** What `finders` find in `text`, longest first where they overlap, in reading order. */
function spansIn(text: string, finders: [string, Finder][]): [number, number, string][] {
  const found = finders.flatMap(([key, find]) =>
    find(text).map(([start, end]): [number, number, string] => [start, end, key])
  );
  found.sort((a, b) => b[1] - b[0] - (a[1] - a[0]));
  const spans: [number, number, string][] = [];
  for (const [start, end, key] of found) {
    if (!spans.some(([s, e]) => start < e && s < end)) {
      spans.push([start, end, key]);
    }
  }
  return spans.sort((a, b) => a[0] - b[0]);
}

/** `text` as text nodes and `<mark>`s over `spans` (sorted, apart, within the text). */
function marked(text: string, spans: [number, number, string][], className: string): Node[] {
  const pieces: Node[] = [];
  let at = 0;
  for (const [start, end, key] of spans) {
    if (start > at) {
      pieces.push(document.createTextNode(text.slice(at, start)));
    }
    pieces.push(el('mark', className, text.slice(start, end), { 'data-term': key }));
    at = end;
  }
  if (at < text.length) {
    pieces.push(document.createTextNode(text.slice(at)));
  }
  return pieces;
}
