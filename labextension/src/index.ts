/**
 * The "Agent Memory" sidebar: nbmemory agents, their messages, archives and search,
 * read from the server extension's REST API (`<base_url>/nbmemory/api`).
 *
 * Every figure is the server's (the read model's): each agent's gauge is drawn against its own
 * context window with its own compression threshold marked. The panel polls at the server's
 * `poll_interval` with `If-None-Match`, so a poll when nothing changed is a 304 with no body and
 * leaves the page as it is. Message text is untrusted: it is rendered as Markdown with raw HTML
 * escaped and no images, or, with "Exact text", shown verbatim in a <pre>.
 *
 * The selected agent's pinned notes (NOTES.md: in every request, never compacted) are listed
 * with an Unpin button each and a field to pin a new one (`POST .../notes`, the "write" action);
 * note text is untrusted too and rendered the same way as messages.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ISanitizer, Sanitizer } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { IMarkdownParser, renderMarkdown } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { ServerConnection } from '@jupyterlab/services';
import { listIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

const PANEL_ID = 'nbmemory-panel';
/** Until the server says otherwise (`NbMemoryServer.poll_interval`). */
const DEFAULT_POLL_SECONDS = 3;
const PAGE_SIZE = 20;
const MEMORY_FILE = 'MEMORY.md';
/** Tags Markdown produces, minus <img>; any other tag in a message (raw HTML) is shown as text. */
const MARKDOWN_TAGS = [
  'a', 'b', 'blockquote', 'br', 'code', 'del', 'div', 'em', 'h1', 'h2', 'h3', 'h4', 'h5',
  'h6', 'hr', 'i', 'li', 'ol', 'p', 'pre', 's', 'span', 'strong', 'sub', 'sup', 'table',
  'tbody', 'td', 'th', 'thead', 'tr', 'ul'
];

/**
 * Tags never rendered: when a message holds one, it is escaped and shown with all its
 * attributes (`<img src=x onerror=...>` as text), so a reader sees what the payload was.
 */
const SHOWN_AS_TEXT = [
  'audio', 'base', 'body', 'button', 'details', 'embed', 'form', 'frame', 'frameset', 'head',
  'html', 'iframe', 'img', 'input', 'link', 'marquee', 'math', 'meta', 'object', 'picture',
  'script', 'select', 'source', 'style', 'svg', 'template', 'textarea', 'track', 'video'
];
/** Attributes kept on rendered tags: no styles (no `url()` fetches), no handlers. */
const RENDERED_ATTRIBUTES: Record<string, string[]> = {
  a: ['href', 'title'],
  ol: ['start'],
  td: ['align'],
  th: ['align']
};

interface IAgent {
  name: string;
  messages: number;
  size: number;
  archives: number;
  last_activity: string | null;
  tokens: number;
  context_length: number;
  threshold: number | null;
  model: string;
  recorded: boolean;
  compacts_next: boolean;
}

interface IAgents {
  workspace: string;
  poll_interval: number;
  agents: IAgent[];
}

interface IItem {
  index: number;
  role: string;
  timestamp: string;
  text: string;
  length: number;
  folded: boolean;
  source: string;
}

interface IPage {
  total: number;
  offset: number;
  limit: number;
  items: IItem[];
}

interface INotes {
  name: string;
  notes: string[];
  tokens: number;
  budget: number;
}

interface IArchive {
  name: string;
  messages: number;
  size: number;
}

/** What the detail area shows for the selected agent. */
type View =
  | { kind: 'memory'; offset: number }
  | { kind: 'archive'; file: string; offset: number }
  | { kind: 'search'; query: string; archives: boolean; offset: number };

/** An answer of the API, and whether it differs from the last one for the same path. */
interface IFetched<T> {
  data: T;
  fresh: boolean;
}

/**
 * GETs under the nbmemory API, with Jupyter's token and XSRF header. The last answer for each
 * path is kept with its ETag; the next GET sends `If-None-Match` and a 304 reuses it.
 */
class Api {
  async get<T>(path: string): Promise<IFetched<T>> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, 'nbmemory', 'api', path);
    const cached = this.cache.get(path);
    const headers: Record<string, string> = cached ? { 'If-None-Match': cached.etag } : {};
    const response = await ServerConnection.makeRequest(url, { headers }, settings);
    if (response.status === 304 && cached) {
      return { data: cached.data as T, fresh: false };
    }
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    const data = (await response.json()) as T;
    const etag = response.headers.get('ETag');
    this.cache.delete(path);
    if (etag) {
      this.cache.set(path, { etag, data });
      while (this.cache.size > 64) {
        this.cache.delete(this.cache.keys().next().value as string);
      }
    }
    return { data, fresh: true };
  }

  /** POST `body` as JSON; the answer, or a `ResponseError` carrying the server's message. */
  async post<T>(path: string, body: unknown): Promise<T> {
    const settings = ServerConnection.makeSettings();
    const url = URLExt.join(settings.baseUrl, 'nbmemory', 'api', path);
    const response = await ServerConnection.makeRequest(
      url,
      { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } },
      settings
    );
    if (!response.ok) {
      throw await ServerConnection.ResponseError.create(response);
    }
    return (await response.json()) as T;
  }

  private readonly cache = new Map<string, { etag: string; data: unknown }>();
}

/**
 * The app's sanitizer, restricted to the tags Markdown produces, without images or styles:
 * raw HTML in a message (`<img onerror=...>`, `<script>`, `<svg onload=...>`) is escaped and
 * shown as text (with its attributes), never rendered; Markdown images are escaped too, so no
 * tracker is fetched; no style attribute survives (no CSS `url()` fetch); links keep only
 * http(s) and mailto targets (a `javascript:` link loses its href).
 */
class MessageSanitizer implements IRenderMime.ISanitizer {
  constructor(private readonly base: IRenderMime.ISanitizer) {}

  sanitize(dirty: string, options?: IRenderMime.ISanitizerOptions): string {
    const strict = {
      allowedTags: MARKDOWN_TAGS,
      disallowedTagsMode: 'escape',
      allowedAttributes: {
        ...Object.fromEntries(SHOWN_AS_TEXT.map(tag => [tag, ['*']])),
        ...RENDERED_ATTRIBUTES
      },
      allowedStyles: {},
      allowedSchemes: ['http', 'https', 'mailto'],
      allowedSchemesByTag: {}
    };
    return this.base.sanitize(dirty, { ...options, ...strict } as IRenderMime.ISanitizerOptions);
  }

  getAutolink(): boolean {
    return this.base.getAutolink?.() ?? true;
  }

  get allowNamedProperties(): boolean {
    return false;
  }
}

/** A DOM element with a class, optional text and attributes. */
function el<K extends keyof HTMLElementTagNameMap>(
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

function button(label: string, title: string, onClick: () => void): HTMLButtonElement {
  const node = el('button', 'jp-nbmemory-button', label, { type: 'button', title });
  node.addEventListener('click', onClick);
  return node;
}

const number = (n: number) => n.toLocaleString();
const plural = (n: number, word: string) => `${number(n)} ${word}${n === 1 ? '' : 's'}`;
const percent = (fraction: number) => `${Math.round(fraction * 1000) / 10}%`;

/** One row of the agent list, kept across polls so focus and selection stay put. */
interface IAgentRow {
  row: HTMLLIElement;
  gauge: HTMLElement;
  bar: HTMLElement;
  mark: HTMLElement;
  figures: HTMLElement;
  key: string;
}

export class MemoryPanel extends Widget {
  constructor(
    private readonly sanitizer: IRenderMime.ISanitizer,
    private readonly markdownParser: IRenderMime.IMarkdownParser | null
  ) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-nbmemory-panel');
    this.node.dataset.testid = PANEL_ID;
    this.title.icon = listIcon;
    this.title.caption = 'Agent Memory';

    const header = el('div', 'jp-nbmemory-header');
    header.append(
      el('h2', 'jp-nbmemory-title', 'Agent Memory'),
      button('Refresh', 'Reload agents and messages', () => void this.refresh())
    );
    this.workspace = el('div', 'jp-nbmemory-workspace', '', {
      'data-testid': 'nbmemory-workspace'
    });
    this.status = el('div', 'jp-nbmemory-status', '', { role: 'status' });
    this.agentList = el('ul', 'jp-nbmemory-agents', undefined, {
      role: 'listbox',
      'aria-label': 'Agents'
    });

    this.search = el('input', 'jp-nbmemory-search-input', undefined, {
      type: 'search',
      placeholder: 'Search (Enter)',
      'aria-label': 'Search messages',
      'data-testid': 'nbmemory-search'
    });
    this.searchArchives = el('input', '', undefined, { type: 'checkbox' });
    const archivesToo = el('label', 'jp-nbmemory-archives-too');
    archivesToo.append(this.searchArchives, ' archives too');
    const form = el('form', 'jp-nbmemory-search');
    form.append(this.search, archivesToo);
    form.addEventListener('submit', event => {
      event.preventDefault();
      const query = this.search.value.trim();
      this.setView(
        query
          ? { kind: 'search', query, archives: this.searchArchives.checked, offset: 0 }
          : { kind: 'memory', offset: 0 }
      );
    });

    this.exact = el('input', '', undefined, {
      type: 'checkbox',
      'data-testid': 'nbmemory-exact'
    });
    this.exact.addEventListener('change', () => {
      this.dirty = true;
      void this.renderMessages();
      void this.renderNotes();
    });
    const exactLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: 'Show each message exactly as stored, with no Markdown'
    });
    exactLabel.append(this.exact, ' Exact text');

    this.notesTitle = el('h4', 'jp-nbmemory-notes-title', 'Pinned notes');
    this.notesList = el('ol', 'jp-nbmemory-notes', undefined, {
      'data-testid': 'nbmemory-notes',
      'aria-label': 'Pinned notes'
    });
    this.notesStatus = el('div', 'jp-nbmemory-notes-status', '', {
      role: 'status',
      'data-testid': 'nbmemory-notes-status'
    });
    this.pinInput = el('input', 'jp-nbmemory-pin-input', undefined, {
      type: 'text',
      placeholder: 'A note to pin (in every request)',
      'aria-label': 'Note to pin',
      'data-testid': 'nbmemory-pin-input'
    });
    this.pinButton = el('button', 'jp-nbmemory-button', 'Pin', {
      type: 'submit',
      title: 'Pin this note: every request carries it, no compaction removes it',
      'aria-label': 'Pin this note',
      'data-testid': 'nbmemory-pin'
    });
    const pinForm = el('form', 'jp-nbmemory-pin-form');
    pinForm.append(this.pinInput, this.pinButton);
    pinForm.addEventListener('submit', event => {
      event.preventDefault();
      void this.pin();
    });
    const notesSection = el('section', 'jp-nbmemory-pinned', undefined, {
      'data-testid': 'nbmemory-pinned',
      'aria-label': 'Pinned notes'
    });
    notesSection.append(this.notesTitle, this.notesList, this.notesStatus, pinForm);

    this.detailTitle = el('h3', 'jp-nbmemory-detail-title');
    this.viewBar = el('div', 'jp-nbmemory-viewbar');
    this.messageList = el('ol', 'jp-nbmemory-messages');
    this.archiveList = el('ul', 'jp-nbmemory-archives');
    this.detail = el('div', 'jp-nbmemory-detail');
    const titleBar = el('div', 'jp-nbmemory-detail-bar');
    titleBar.append(this.detailTitle, exactLabel);
    this.detail.append(
      titleBar,
      notesSection,
      form,
      this.viewBar,
      this.messageList,
      el('h4', 'jp-nbmemory-archives-title', 'Archives'),
      this.archiveList
    );
    this.detail.hidden = true;
    this.node.append(header, this.workspace, this.status, this.agentList, this.detail);
  }

  /** Reload the agent list and the selected agent's current view (unchanged parts stay). */
  async refresh(): Promise<void> {
    const generation = ++this.generation;
    try {
      const { data } = await this.api.get<IAgents>('agents');
      if (generation !== this.generation) {
        return;
      }
      this.setPollInterval(data.poll_interval);
      this.workspace.textContent = `Workspace: ${data.workspace}`;
      this.workspace.title = data.workspace;
      this.renderAgents(data.agents);
      if (this.selected && !data.agents.some(a => a.name === this.selected)) {
        this.selected = null;
      }
      this.detail.hidden = this.selected === null;
      if (this.selected) {
        await this.loadDetail(this.selected, generation);
      }
      if (generation === this.generation) {
        this.status.textContent = data.agents.length
          ? ''
          : `No agents in ${data.workspace} yet.`;
      }
    } catch (error) {
      if (generation === this.generation) {
        this.status.textContent = `Could not reach the nbmemory server extension: ${error}`;
      }
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
    this.startPolling();
  }

  protected onBeforeHide(msg: Message): void {
    window.clearInterval(this.timer);
    this.timer = 0;
    super.onBeforeHide(msg);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    super.dispose();
  }

  private startPolling(): void {
    window.clearInterval(this.timer);
    this.timer = window.setInterval(() => {
      if (this.isVisible && !document.hidden) {
        void this.refresh();
      }
    }, this.pollSeconds * 1000);
  }

  private setPollInterval(seconds: number): void {
    if (seconds > 0 && seconds !== this.pollSeconds) {
      this.pollSeconds = seconds;
      if (this.timer) {
        this.startPolling();
      }
    }
  }

  private select(name: string): void {
    if (name !== this.selected) {
      this.search.value = '';
      this.full.clear();
    }
    this.selected = name;
    this.view = { kind: 'memory', offset: 0 };
    this.dirty = true;
    for (const [other, { row }] of this.rows) {
      row.setAttribute('aria-selected', String(other === name));
    }
    void this.refresh();
  }

  private setView(view: View): void {
    this.view = view;
    this.dirty = true;
    void this.refresh();
  }

  /** Update the rows in place: a row is made once per agent and changed only when its figures do. */
  private renderAgents(agents: IAgent[]): void {
    const names = new Set(agents.map(a => a.name));
    for (const [name, { row }] of this.rows) {
      if (!names.has(name)) {
        row.remove();
        this.rows.delete(name);
      }
    }
    agents.forEach((agent, position) => {
      let entry = this.rows.get(agent.name);
      if (!entry) {
        entry = this.makeRow(agent.name);
        this.rows.set(agent.name, entry);
      }
      this.fillRow(entry, agent);
      if (this.agentList.children[position] !== entry.row) {
        this.agentList.insertBefore(entry.row, this.agentList.children[position] ?? null);
      }
    });
  }

  private makeRow(name: string): IAgentRow {
    const row = el('li', 'jp-nbmemory-agent', undefined, {
      role: 'option',
      tabindex: '0',
      'aria-selected': String(name === this.selected),
      'data-testid': 'nbmemory-agent',
      'data-name': name
    });
    const gauge = el('div', 'jp-nbmemory-gauge', undefined, {
      role: 'meter',
      'aria-valuemin': '0',
      'data-testid': 'nbmemory-gauge'
    });
    const bar = el('div', 'jp-nbmemory-gauge-bar');
    const mark = el('div', 'jp-nbmemory-gauge-threshold', undefined, {
      'data-testid': 'nbmemory-threshold'
    });
    gauge.append(bar, mark);
    const figures = el('span', 'jp-nbmemory-agent-figures', '', {
      'data-testid': 'nbmemory-figures'
    });
    row.append(el('span', 'jp-nbmemory-agent-name', name), gauge, figures);
    row.addEventListener('click', () => this.select(name));
    row.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this.select(name);
      }
    });
    return { row, gauge, bar, mark, figures, key: '' };
  }

  private fillRow(entry: IAgentRow, agent: IAgent): void {
    const key = JSON.stringify(agent);
    if (key === entry.key) {
      return;
    }
    entry.key = key;
    const { tokens, context_length: window, threshold } = agent;
    const share = window > 0 ? Math.min(1, tokens / window) : 0;
    entry.row.dataset.tokens = String(tokens);
    entry.row.dataset.contextLength = String(window);
    entry.row.dataset.threshold = threshold === null ? '' : String(threshold);
    entry.row.dataset.messages = String(agent.messages);
    entry.bar.style.width = `${(share * 100).toFixed(1)}%`;
    entry.bar.classList.toggle('jp-mod-full', agent.compacts_next);
    entry.mark.hidden = threshold === null;
    entry.mark.style.left = threshold === null ? '' : `${Math.min(100, threshold * 100)}%`;
    entry.gauge.setAttribute('aria-valuemax', String(window));
    entry.gauge.setAttribute('aria-valuenow', String(Math.min(tokens, window)));
    const compresses =
      threshold === null
        ? 'compression off'
        : `compresses at ${percent(threshold)} (${number(Math.ceil(threshold * window))} tokens)`;
    entry.gauge.title =
      `${number(tokens)} of ${number(window)} tokens (${percent(tokens / (window || 1))}) ` +
      `for ${agent.model}; ${compresses}` +
      (agent.recorded ? '' : '; default settings (the agent has not recorded its own)');
    entry.figures.textContent =
      `${number(tokens)} / ${number(window)} tokens · ` +
      (threshold === null ? 'no compression' : `compresses at ${percent(threshold)}`) +
      ` · ${plural(agent.messages, 'message')}` +
      (agent.archives ? ` · ${plural(agent.archives, 'archive')}` : '') +
      (agent.compacts_next ? ' · compacts on next run' : '');
  }

  private async loadDetail(name: string, generation: number): Promise<void> {
    const agent = encodeURIComponent(name);
    const view = this.view;
    let page: IFetched<IPage>;
    let caption: string;
    if (view.kind === 'search') {
      const query =
        `q=${encodeURIComponent(view.query)}&archives=${view.archives ? 1 : 0}` +
        `&offset=${view.offset}&limit=${PAGE_SIZE}`;
      page = await this.api.get<IPage>(`agents/${agent}/search?${query}`);
      const { total, offset, items } = page.data;
      const range = items.length ? `, ${offset + 1}–${offset + items.length}` : '';
      caption = `${plural(total, 'hit')} for “${view.query}”${range}`;
    } else {
      const paging = `offset=${view.offset}&limit=${PAGE_SIZE}&newest_first=1`;
      const path =
        view.kind === 'archive'
          ? `agents/${agent}/archives/${encodeURIComponent(view.file)}?${paging}`
          : `agents/${agent}?${paging}`;
      page = await this.api.get<IPage>(path);
      const { total, offset, items } = page.data;
      const range = total
        ? `${offset + 1}–${offset + items.length} of ${number(total)}, newest first`
        : 'no messages';
      caption = view.kind === 'archive' ? `Archive ${view.file}: ${range}` : `Memory: ${range}`;
    }
    const archives = await this.api.get<{ archives: IArchive[] }>(`agents/${agent}/archives`);
    const notes = await this.api.get<INotes>(`agents/${agent}/notes`);
    if (generation !== this.generation) {
      return;
    }
    if (notes.fresh || name !== this.notesAgent) {
      this.notesStatus.textContent = name === this.notesAgent ? this.notesStatus.textContent : '';
      this.notes = notes.data;
      this.notesAgent = name;
      await this.renderNotes();
    }
    const changed = this.dirty || page.fresh || archives.fresh || name !== this.shownAgent;
    if (!changed) {
      return; // a poll when nothing changed: leave the page (and the focus) as it is
    }
    this.dirty = false;
    this.shownAgent = name;
    this.detailTitle.textContent = name;
    this.renderViewBar(caption, page.data);
    this.items = page.data.items;
    this.itemsAgent = name;
    await this.renderMessages();
    this.renderArchives(archives.data.archives);
  }

  private renderViewBar(caption: string, page: IPage): void {
    const view = this.view;
    const controls: HTMLElement[] = [el('span', 'jp-nbmemory-caption', caption)];
    if (view.kind !== 'memory') {
      controls.push(
        button('Back to memory', 'Show the live memory', () => {
          this.search.value = '';
          this.setView({ kind: 'memory', offset: 0 });
        })
      );
    }
    const search = view.kind === 'search';
    const back = button(search ? 'Previous' : 'Newer', search ? 'Previous hits' : 'Newer messages', () =>
      this.setView({ ...view, offset: Math.max(0, view.offset - PAGE_SIZE) })
    );
    const on = button(search ? 'Next' : 'Older', search ? 'More hits' : 'Older messages', () =>
      this.setView({ ...view, offset: view.offset + PAGE_SIZE })
    );
    back.disabled = page.offset === 0;
    on.disabled = page.offset + page.items.length >= page.total;
    if (!(back.disabled && on.disabled)) {
      controls.push(back, on);
    }
    this.viewBar.replaceChildren(...controls);
  }

  private fullKey(item: IItem): string {
    return `${this.itemsAgent}\u0000${item.source}\u0000${item.index}`;
  }

  private async renderMessages(): Promise<void> {
    const rendered = ++this.renderGeneration;
    const cards = this.items.map(item => this.card(item));
    this.messageList.replaceChildren(...cards.map(c => c.card));
    if (!this.items.length) {
      this.messageList.append(el('li', 'jp-nbmemory-empty', 'Nothing here.'));
    }
    await Promise.all(cards.map(c => c.fill(rendered)));
  }

  /** A message card; `fill` renders its body (Markdown, or the exact text). */
  private card(item: IItem): { card: HTMLLIElement; fill: (r: number) => Promise<void> } {
    const card = el('li', 'jp-nbmemory-message', undefined, {
      'data-testid': 'nbmemory-message',
      'data-role': item.role.toLowerCase(),
      'data-index': String(item.index)
    });
    const meta = el('div', 'jp-nbmemory-message-meta');
    meta.append(
      el('span', 'jp-nbmemory-role', item.role),
      el('span', 'jp-nbmemory-when', `#${item.index} ${item.timestamp}`)
    );
    if (item.source !== MEMORY_FILE || this.view.kind === 'search') {
      meta.append(el('span', 'jp-nbmemory-source', item.source));
    }
    const body = el('div', 'jp-nbmemory-message-body', undefined, {
      'data-testid': 'nbmemory-message-body'
    });
    card.append(meta, body);
    const full = this.full.get(this.fullKey(item));
    const text = full ?? item.text;
    if (item.folded && full === undefined) {
      const note = el('div', 'jp-nbmemory-fold');
      note.append(
        el(
          'span',
          'jp-nbmemory-fold-text',
          `Showing ${number(item.text.length)} of ${number(item.length)} characters.`
        ),
        button('Show full text', 'Load the whole message', () => void this.showFull(item, note))
      );
      card.append(note);
    }
    const fill = async (rendered: number) => {
      if (rendered === this.renderGeneration) {
        await this.renderBody(body, text);
      }
    };
    return { card, fill };
  }

  private async renderBody(body: HTMLElement, text: string): Promise<void> {
    if (this.exact.checked) {
      body.classList.remove('jp-RenderedMarkdown');
      const pre = el('pre', 'jp-nbmemory-exact-text', undefined, {
        'data-testid': 'nbmemory-exact-text'
      });
      pre.textContent = text; // verbatim: what the agent will read, injected instructions and all
      body.replaceChildren(pre);
      return;
    }
    body.classList.add('jp-RenderedMarkdown');
    await renderMarkdown({
      host: body,
      source: text,
      trusted: false,
      sanitizer: this.sanitizer,
      resolver: null,
      linkHandler: null,
      shouldTypeset: false,
      latexTypesetter: null,
      markdownParser: this.markdownParser
    });
  }

  private async showFull(item: IItem, note: HTMLElement): Promise<void> {
    const name = this.itemsAgent;
    const archive = item.source === MEMORY_FILE ? '' : `?archive=${encodeURIComponent(item.source)}`;
    note.replaceChildren(el('span', 'jp-nbmemory-fold-text', 'Loading the full text…'));
    try {
      const { data } = await this.api.get<IItem>(
        `agents/${encodeURIComponent(name)}/messages/${item.index}${archive}`
      );
      if (name !== this.itemsAgent) {
        return;
      }
      this.full.set(this.fullKey(item), data.text);
      const card = note.parentElement;
      const body = card?.querySelector<HTMLElement>('.jp-nbmemory-message-body');
      note.remove();
      if (body) {
        await this.renderBody(body, data.text);
      }
    } catch (error) {
      note.replaceChildren(el('span', 'jp-nbmemory-fold-text', `Could not load it: ${error}`));
    }
  }

  /** The selected agent's pinned notes, numbered, each with its Unpin button. */
  private async renderNotes(): Promise<void> {
    const data = this.notes;
    if (!data) {
      return;
    }
    const rendered = ++this.notesGeneration;
    this.notesTitle.textContent = data.notes.length
      ? `Pinned notes · ${number(data.tokens)} of ${number(data.budget)} tokens`
      : 'Pinned notes';
    const bodies: [HTMLElement, string][] = [];
    const rows = data.notes.map((text, i) => {
      const row = el('li', 'jp-nbmemory-note', undefined, {
        'data-testid': 'nbmemory-note',
        'data-number': String(i + 1)
      });
      const body = el('div', 'jp-nbmemory-note-body', undefined, {
        'data-testid': 'nbmemory-note-body'
      });
      const unpin = button('Unpin', `Unpin note ${i + 1}`, () => void this.unpin(i + 1, text));
      unpin.dataset.testid = 'nbmemory-unpin';
      unpin.setAttribute('aria-label', `Unpin note ${i + 1}`);
      unpin.disabled = this.notesBusy;
      row.append(body, unpin);
      bodies.push([body, text]);
      return row;
    });
    this.notesList.replaceChildren(...rows);
    if (!rows.length) {
      this.notesList.append(el('li', 'jp-nbmemory-empty', 'No pinned notes.'));
    }
    for (const [body, text] of bodies) {
      if (rendered !== this.notesGeneration) {
        return;
      }
      await this.renderBody(body, text);
    }
  }

  private async pin(): Promise<void> {
    const note = this.pinInput.value;
    if (!note.trim()) {
      this.notesStatus.textContent = 'Not pinned: a note must not be empty.';
      return;
    }
    const done = await this.changeNotes({ pin: note }, 'Not pinned');
    if (done) {
      this.pinInput.value = ''; // kept when the server refused it: nothing typed is lost
      this.notesStatus.textContent = `Pinned as note ${this.notes?.notes.length ?? ''}.`;
    }
  }

  private async unpin(numberShown: number, text: string): Promise<void> {
    const done = await this.changeNotes(
      { unpin: String(numberShown), note: text },
      'Not unpinned'
    );
    if (done) {
      this.notesStatus.textContent = `Unpinned note ${numberShown}.`;
    }
  }

  /** Send a pin or unpin for the selected agent; show the new list or why it was refused. */
  private async changeNotes(body: Record<string, string>, refused: string): Promise<boolean> {
    const name = this.notesAgent;
    if (!name || this.notesBusy) {
      return false;
    }
    this.notesBusy = true;
    this.pinButton.disabled = true;
    try {
      const data = await this.api.post<INotes>(
        `agents/${encodeURIComponent(name)}/notes`,
        body
      );
      if (name === this.notesAgent) {
        this.notes = data;
      }
      return true;
    } catch (error) {
      const message =
        error instanceof ServerConnection.ResponseError ? error.message : String(error);
      this.notesStatus.textContent = `${refused}: ${message}`;
      return false;
    } finally {
      this.notesBusy = false;
      this.pinButton.disabled = false;
      await this.renderNotes();
      void this.refresh(); // the agent's figures include the notes
    }
  }

  private renderArchives(archives: IArchive[]): void {
    const open = this.view.kind === 'archive' ? this.view.file : null;
    this.archiveList.replaceChildren(
      ...archives.map(archive => {
        const row = el('li', 'jp-nbmemory-archive', undefined, {
          'aria-current': String(archive.name === open),
          'data-testid': 'nbmemory-archive'
        });
        row.append(
          button(archive.name, 'Show this archive', () =>
            this.setView({ kind: 'archive', file: archive.name, offset: 0 })
          ),
          el('span', 'jp-nbmemory-agent-figures', plural(archive.messages, 'message'))
        );
        return row;
      })
    );
    if (!archives.length) {
      this.archiveList.append(el('li', 'jp-nbmemory-empty', 'No archives.'));
    }
  }

  private readonly api = new Api();
  private readonly workspace: HTMLElement;
  private readonly status: HTMLElement;
  private readonly agentList: HTMLUListElement;
  private readonly rows = new Map<string, IAgentRow>();
  private readonly detail: HTMLElement;
  private readonly detailTitle: HTMLElement;
  private readonly viewBar: HTMLElement;
  private readonly messageList: HTMLOListElement;
  private readonly archiveList: HTMLUListElement;
  private readonly notesTitle: HTMLElement;
  private readonly notesList: HTMLOListElement;
  private readonly notesStatus: HTMLElement;
  private readonly pinInput: HTMLInputElement;
  private readonly pinButton: HTMLButtonElement;
  private notes: INotes | null = null;
  private notesAgent = '';
  private notesBusy = false;
  private notesGeneration = 0;
  private readonly search: HTMLInputElement;
  private readonly searchArchives: HTMLInputElement;
  private readonly exact: HTMLInputElement;
  /** Whole texts loaded with "Show full text", by agent, file and index. */
  private readonly full = new Map<string, string>();
  private selected: string | null = null;
  private view: View = { kind: 'memory', offset: 0 };
  private items: IItem[] = [];
  private itemsAgent = '';
  private shownAgent = '';
  private dirty = true;
  private generation = 0;
  private renderGeneration = 0;
  private pollSeconds = DEFAULT_POLL_SECONDS;
  private timer = 0;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nbmemory:sidebar',
  description: 'A left-sidebar panel with the memory of nbmemory agents.',
  autoStart: true,
  optional: [ISanitizer, IMarkdownParser, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    sanitizer: IRenderMime.ISanitizer | null,
    markdownParser: IRenderMime.IMarkdownParser | null,
    restorer: ILayoutRestorer | null
  ) => {
    const panel = new MemoryPanel(
      new MessageSanitizer(sanitizer ?? new Sanitizer()),
      markdownParser
    );
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, PANEL_ID);
  }
};

export default plugin;
