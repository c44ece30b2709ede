/**
 * A message card, the one of the panel and the widget: its role, number, time and file, what it
 * adds to a request (when asked), the notebook cell it came from, its text (rendered, or exact
 * with "Exact text"), a Copy button, and "Show full text" when it came folded; search hits and
 * an archive's dropped terms are marked in it. A tool call reads as the tool's name and its
 * arguments one per line, a tool's result as the name and the result's text; "Exact text"
 * shows the stored JSON instead. Every text goes in as text: nothing here parses HTML but the
 * Markdown renderer's sanitized output.
 *
 * Framework-free: the card is drawn from the read model's item and calls back for what a frame
 * does (copy, load the whole text, draw a cell link). `prefix` starts its classes and test ids:
 * "jp-nbmemory-" and "nbmemory-" in the panel, none in the widget.
 */
import { el } from './dom';
import { foldNote } from './fold';
import { counted } from './format';
import { Finder, markText } from './marks';
import { shownText } from './text';
import { label, messageNumber, showBidi } from './vocabulary';

/** A tool call (`calls`, what the model `said` beside them) or a tool's `result` from `name`
 * (`nbmemory.views.tool_calls.ToolMessage.to_json`). */
export interface IToolMessage {
  said?: string;
  calls?: { name: string; arguments: [string, string][] }[];
  name?: string;
  result?: string;
}

/** The notebook cell a message came from, as the card's line says it. */
export interface ICellLabel {
  label: string;
  superseded: boolean;
  superseded_label: string | null;
}

/** A message as the read model sends it (`answers.Item.to_json`), with its tokens if counted. */
export interface IMessage {
  index: number;
  role: string;
  timestamp: string;
  text: string;
  length?: number;
  folded?: boolean;
  source: string;
  provenance?: ICellLabel | null;
  tool?: IToolMessage | null;
  tokens?: number;
}

/** How a frame draws cards and what it does for them. */
export interface ICardOptions<M extends IMessage> {
  /** Starts every class and test id (see the module's note). */
  classes: string;
  ids: string;
  /** Classes of the card's buttons besides their own (the panel's JupyterLab buttons). */
  buttonClass?: string;
  exact: boolean;
  /** Whether the card names its file (in search results and archives). */
  showSource: boolean;
  /** What to mark in its text, and the marks' class (without the prefix). */
  marks?: { finders: [string, Finder][]; className: string };
  /** More attributes of the card (the panel's `data-agent`, `data-key`). */
  attrs?: Record<string, string>;
  /** The cell line; without it, the cell's label as text. */
  cell?: (item: M) => HTMLElement;
  /** Copy the message's whole stored text. */
  copy: (item: M) => void;
  /** Load the whole text of a folded message (absent: none can be loaded). */
  showFull?: (item: M, button: HTMLButtonElement) => void;
}

/** A card for `item` (its text whole if `whole` is given: loaded with "Show full text"). */
export function messageCard<M extends IMessage>(
  item: M,
  options: ICardOptions<M>,
  whole?: { text: string; tool?: IToolMessage | null }
): HTMLElement {
  const { classes: c, ids } = options;
  const number = messageNumber(item.index);
  const card = el('li', `${c}message`, undefined, {
    'data-testid': `${ids}message`,
    'data-role': item.role,
    'data-index': String(item.index),
    'data-source': item.source,
    tabindex: '-1',
    'aria-label': `${item.role}, message ${number} of ${item.source}, ${item.timestamp}`,
    ...options.attrs
  });
  const meta = el('div', `${c}message-meta`);
  meta.append(
    el('span', `${c}role`, item.role),
    el('span', `${c}when`, `${number} ${item.timestamp}`),
    tokensSlot(item, c, ids)
  );
  if (options.showSource) {
    meta.append(el('span', `${c}source`, item.source));
  }
  const copy = button(options, 'copy', 'Copy', () => options.copy(item));
  meta.append(copy);
  card.append(meta);
  if (item.provenance) {
    card.append(options.cell ? options.cell(item) : cellText(item.provenance, c, ids));
  }
  const body = el('div', `${c}content`, undefined, { 'data-testid': `${ids}message-body` });
  const text = whole?.text ?? item.text;
  const tool = whole ? whole.tool : item.tool;
  if (tool && !options.exact) {
    body.append(toolView(tool, c, ids));
  } else {
    body.append(shownText(text, options.exact, { class: `${c}exact-text`, 'data-testid': `${ids}exact-text` }));
  }
  if (options.marks) {
    const { finders, className } = options.marks;
    card.dataset.hits = String(markText(body, finders, `${c}${className}`));
  }
  card.append(body);
  if (item.folded && !whole && options.showFull) {
    const more = button(options, 'more', label('show full', 'Show full text'), () =>
      options.showFull!(item, more)
    );
    more.dataset.testid = `${ids}full-text`;
    const attrs = { 'data-testid': `${ids}fold` };
    card.append(foldNote(item.text.length, item.length ?? item.text.length, more, `${c}fold`, attrs));
  }
  return card;
}

/** The slot a message's tokens are said in ("12 tokens"), filled when they were counted. */
function tokensSlot(item: IMessage, c: string, ids: string): HTMLElement {
  const slot = el('span', `${c}message-tokens`, '', { 'data-testid': `${ids}message-tokens` });
  if (item.tokens !== undefined) {
    slot.textContent = counted(item.tokens, 'token');
    slot.dataset.tokens = String(item.tokens);
  }
  return slot;
}

function button<M extends IMessage>(
  options: ICardOptions<M>,
  name: string,
  text: string,
  onClick: () => void
): HTMLButtonElement {
  const classes = [options.buttonClass, `${options.classes}${name}`].filter(Boolean).join(' ');
  const node = el('button', classes, text, { type: 'button', 'data-testid': `${options.ids}${name}` });
  node.addEventListener('click', onClick);
  return node;
}

/** The cell's label as text, with "superseded by cell [n]" when that cell ran again. */
function cellText(cell: ICellLabel, c: string, ids: string): HTMLElement {
  const superseded = cell.superseded && cell.superseded_label;
  const words = [cell.label, superseded ? cell.superseded_label : ''].filter(Boolean).join(', ');
  const classes = superseded ? `${c}cell ${c}superseded` : `${c}cell`;
  return el('div', classes, words, { 'data-testid': `${ids}cell` });
}

/**
 * A tool message as people read it: "Calls NAME" with one line per argument (a value of
 * several lines as those lines), or "Result of NAME" and the result's lines, all as text.
 */
function toolView(tool: IToolMessage, c: string, ids: string): HTMLElement {
  const view = el('div', `${c}tool`, undefined, { 'data-testid': `${ids}tool` });
  const lines = (text: string, className: string, testid: string, tag: 'div' | 'dd' = 'div') =>
    el(tag, `${c}${className}`, showBidi(text), { 'data-testid': `${ids}${testid}` });
  if (tool.result !== undefined) {
    view.append(
      toolName(label('tool result', 'Result of'), tool.name ?? '', c, ids),
      lines(tool.result, 'tool-lines', 'tool-result')
    );
    return view;
  }
  if (tool.said?.trim()) {
    view.append(lines(tool.said, 'tool-lines', 'tool-said'));
  }
  for (const call of tool.calls ?? []) {
    const args = el('dl', `${c}tool-arguments`, undefined, { 'data-testid': `${ids}tool-arguments` });
    for (const [key, value] of call.arguments) {
      args.append(el('dt', '', showBidi(key)), lines(value, 'tool-lines', 'tool-value', 'dd'));
    }
    view.append(toolName(label('tool call', 'Calls'), call.name, c, ids), args);
  }
  return view;
}

function toolName(words: string, name: string, c: string, ids: string): HTMLElement {
  const head = el('div', `${c}tool-name`, `${words} `, { 'data-testid': `${ids}tool-name` });
  head.append(el('code', '', showBidi(name)));
  return head;
}
