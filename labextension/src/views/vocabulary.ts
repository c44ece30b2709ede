/**
 * The words and rules every view shares with %memory and the CLI (`nbmemory.wording.vocabulary`):
 * the panel gets them with the agents, the widget from the kernel's vocabulary model. Part
 * descriptions and colours, labels, sentences, message numbers, and which characters "Exact
 * text" reveals.
 */

/** One part of a request as every view draws it (`wording.vocabulary`). */
export interface IPartStyle {
  name: string;
  description: string;
  /** A CSS colour: the same in both gauges. */
  color: string;
}

/** The words and rules every view shares (`wording.vocabulary`). */
export interface IVocabulary {
  fold_chars: number;
  first_number: number;
  /** A regular expression of the characters "Exact text" reveals as ⟨U+202E⟩. */
  invisible: string;
  /** A regular expression of the bidirectional controls, which no view lets reorder text. */
  bidi: string;
  parts: IPartStyle[];
  labels: Record<string, string>;
  /** The four page buttons by what is paged ("newest first", "oldest first", "results"), as
   * keys of `labels`. */
  pagers: Record<string, string[]>;
  /** Sentences with `{slots}` that every view fills the same way (`wording.PHRASES`). */
  phrases: Record<string, string>;
}

// Before the vocabulary arrives: nothing revealed, and an image's words (the Markdown renderer
// is set up before any view draws) as the vocabulary has them.
let current: IVocabulary = {
  fold_chars: 2000,
  first_number: 1,
  invisible: '(?!)',
  bidi: '(?!)',
  parts: [],
  labels: { image: 'image' },
  pagers: {},
  phrases: { image: 'image: {alt}' }
};
let pattern = new RegExp(current.invisible, 'gu');
let bidi = new RegExp(current.bidi, 'gu');

/** Keep the vocabulary (the server's, from `GET agents`; the widget's, from its model). */
export function setVocabulary(vocabulary: IVocabulary): void {
  if (vocabulary.invisible !== current.invisible) {
    pattern = new RegExp(vocabulary.invisible, 'gu');
  }
  if (vocabulary.bidi !== current.bidi) {
    bidi = new RegExp(vocabulary.bidi, 'gu');
  }
  current = vocabulary;
}

/** A fixed label (`wording.LABELS`), or `fallback` before the server said it. */
export function label(key: string, fallback = ''): string {
  return current.labels[key] ?? fallback;
}

type Slots = Record<string, string | number>;

const fill = (template: string, slots: Slots): string =>
  template.replace(/\{(\w+)\}/g, (_, slot: string) => String(slots[slot] ?? ''));

/** A sentence of the vocabulary (`wording.PHRASES`) with its `{slots}` filled. */
export function phrase(key: string, slots: Slots = {}): string {
  return fill(current.phrases[key] ?? '', slots);
}

/** A sentence split where its slot `open` is, for an element to stand there: [before, after]. */
export function phraseAround(key: string, open: string, slots: Slots): [string, string] {
  const template = current.phrases[key] ?? `{${open}}`;
  const at = template.indexOf(`{${open}}`);
  return [fill(template.slice(0, at), slots), fill(template.slice(at + open.length + 2), slots)];
}

/** The names of the four page buttons (start, back, on, end) for a `pager`: "newest first",
 * "oldest first" or "results" (`wording.PAGERS`). */
export function pagerLabels(pager: string): [string, string, string, string] {
  const [start, back, on, end] = (current.pagers[pager] ?? []).map(key => current.labels[key]);
  return [start, back, on, end];
}

/** What part `name` is, and the colour both gauges draw it in. */
export function partStyle(name: string): { description: string; color: string } | undefined {
  return current.parts.find(part => part.name === name);
}

/** A message's number for people ("#1" for index 0), as in every view. */
export function messageNumber(index: number): string {
  return `#${index + current.first_number}`;
}

/** `text` with each invisible or bidirectional character shown as ⟨U+202E⟩, never applied. */
export function reveal(text: string): string {
  return text.replace(pattern, codePoint);
}

/** "⟨U+202E⟩" for U+202E: how every view shows a character that would hide or reorder text. */
const codePoint = (c: string): string =>
  `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`;

/**
 * `text` with its bidirectional controls (`wording.BIDI`) shown as ⟨U+202E⟩: what the normal
 * views render and the summary boxes hold, so that no control reorders what is around it
 * ("invoice⟨U+202E⟩fdp.exe", not "invoiceexe.pdf").
 */
export function showBidi(text: string): string {
  return text.replace(bidi, codePoint);
}

/** A box's text with the controls `showBidi` showed put back, as the person left them. */
export function unshowBidi(text: string): string {
  return text.replace(/⟨U\+([0-9A-F]{4})⟩/g, (shown, hex: string) => {
    const c = String.fromCodePoint(parseInt(hex, 16));
    return c.replace(bidi, '') ? shown : c;
  });
}
