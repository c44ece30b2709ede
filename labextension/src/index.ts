/**
 * The "Agent Memory" sidebar: nbmemory agents, their messages, archives and search,
 * read from the server extension's REST API (`<base_url>/nbmemory/api`).
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
const POLL_MS = 3000;
const PAGE_SIZE = 20;
/** nbmemory's default context window (`nbmemory.tokens.DEFAULT_CONTEXT_WINDOW`): the gauge's scale. */
const GAUGE_TOKENS = 16000;
/** Tags Markdown produces; any other tag in a message (raw HTML) is shown as text. */
const MARKDOWN_TAGS = [
  'a', 'b', 'blockquote', 'br', 'code', 'del', 'div', 'em', 'h1', 'h2', 'h3', 'h4', 'h5',
  'h6', 'hr', 'i', 'li', 'ol', 'p', 'pre', 's', 'span', 'strong', 'sub', 'sup', 'table',
  'tbody', 'td', 'th', 'thead', 'tr', 'ul'
];

interface IAgent {
  name: string;
  messages: number;
  tokens: number;
  size: number;
  archives: number;
  last_activity: string | null;
}

interface IMessage {
  index: number;
  role: string;
  timestamp: string;
  content: string;
  source?: string;
}

interface IPage {
  total: number;
  page: number;
  page_size: number;
  messages: IMessage[];
}

interface IArchive {
  name: string;
  messages: number;
}

/** What the detail area shows for the selected agent. */
type View =
  | { kind: 'memory'; page: number }
  | { kind: 'archive'; file: string; page: number }
  | { kind: 'search'; query: string; archives: boolean };

/** GET `path` under the nbmemory API, with Jupyter's token and XSRF header. */
async function api<T>(path: string): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, 'nbmemory', 'api', path);
  const response = await ServerConnection.makeRequest(url, {}, settings);
  if (!response.ok) {
    throw await ServerConnection.ResponseError.create(response);
  }
  return (await response.json()) as T;
}

/**
 * The app's sanitizer, restricted to the tags Markdown produces: raw HTML in a message
 * (`<img onerror=...>`, `<script>`) is escaped and shown as text, never rendered.
 */
class MessageSanitizer implements IRenderMime.ISanitizer {
  constructor(private readonly base: IRenderMime.ISanitizer) {}

  sanitize(dirty: string, options?: IRenderMime.ISanitizerOptions): string {
    const strict = { allowedTags: MARKDOWN_TAGS, disallowedTagsMode: 'escape' };
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
    this.status = el('div', 'jp-nbmemory-status', '', { role: 'status' });
    this.agentList = el('ul', 'jp-nbmemory-agents', undefined, { role: 'listbox' });

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
          ? { kind: 'search', query, archives: this.searchArchives.checked }
          : { kind: 'memory', page: 0 }
      );
    });

    this.detailTitle = el('h3', 'jp-nbmemory-detail-title');
    this.viewBar = el('div', 'jp-nbmemory-viewbar');
    this.messageList = el('ol', 'jp-nbmemory-messages');
    this.archiveList = el('ul', 'jp-nbmemory-archives');
    this.detail = el('div', 'jp-nbmemory-detail');
    this.detail.append(
      this.detailTitle,
      form,
      this.viewBar,
      this.messageList,
      el('h4', 'jp-nbmemory-archives-title', 'Archives'),
      this.archiveList
    );
    this.detail.hidden = true;
    this.node.append(header, this.status, this.agentList, this.detail);
  }

  /** Reload the agent list and the selected agent's current view. */
  async refresh(): Promise<void> {
    const generation = ++this.generation;
    try {
      const { agents } = await api<{ agents: IAgent[] }>('agents');
      if (generation !== this.generation) {
        return;
      }
      this.renderAgents(agents);
      if (this.selected && !agents.some(a => a.name === this.selected)) {
        this.selected = null;
      }
      this.detail.hidden = this.selected === null;
      if (this.selected) {
        await this.loadDetail(this.selected, generation);
      }
      this.status.textContent = agents.length ? '' : 'No agents in the workspace yet.';
    } catch (error) {
      if (generation === this.generation) {
        this.status.textContent = `Could not reach the nbmemory server extension: ${error}`;
      }
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
    this.timer = window.setInterval(() => {
      if (this.isVisible && !document.hidden) {
        void this.refresh();
      }
    }, POLL_MS);
  }

  protected onBeforeHide(msg: Message): void {
    window.clearInterval(this.timer);
    super.onBeforeHide(msg);
  }

  dispose(): void {
    window.clearInterval(this.timer);
    super.dispose();
  }

  private select(name: string): void {
    this.selected = name;
    this.search.value = '';
    this.view = { kind: 'memory', page: 0 };
    this.rendered = '';
    this.renderedArchives = '';
    void this.refresh();
  }

  private setView(view: View): void {
    this.view = view;
    void this.refresh();
  }

  private renderAgents(agents: IAgent[]): void {
    this.agentList.replaceChildren(
      ...agents.map(agent => {
        const row = el('li', 'jp-nbmemory-agent', undefined, {
          role: 'option',
          tabindex: '0',
          'aria-selected': String(agent.name === this.selected),
          'data-testid': 'nbmemory-agent'
        });
        const share = Math.min(1, agent.tokens / GAUGE_TOKENS);
        const gauge = el('div', 'jp-nbmemory-gauge', undefined, {
          title: `${number(agent.tokens)} of ${number(GAUGE_TOKENS)} tokens (default context window)`
        });
        const bar = el('div', 'jp-nbmemory-gauge-bar');
        bar.style.width = `${(share * 100).toFixed(1)}%`;
        bar.classList.toggle('jp-mod-full', share >= 0.8);
        gauge.append(bar);
        const figures =
          `${plural(agent.tokens, 'token')} · ${plural(agent.messages, 'message')}` +
          (agent.archives ? ` · ${plural(agent.archives, 'archive')}` : '');
        row.append(
          el('span', 'jp-nbmemory-agent-name', agent.name),
          gauge,
          el('span', 'jp-nbmemory-agent-figures', figures)
        );
        row.addEventListener('click', () => this.select(agent.name));
        row.addEventListener('keydown', event => {
          if (event.key === 'Enter' || event.key === ' ') {
            event.preventDefault();
            this.select(agent.name);
          }
        });
        return row;
      })
    );
  }

  private async loadDetail(name: string, generation: number): Promise<void> {
    const agent = encodeURIComponent(name);
    const view = this.view;
    let messages: IMessage[];
    let caption: string;
    let pager: IPage | null = null;
    if (view.kind === 'search') {
      const query = `q=${encodeURIComponent(view.query)}&archives=${view.archives ? 1 : 0}`;
      const data = await api<{ hits: IMessage[] }>(`agents/${agent}/search?${query}`);
      messages = data.hits;
      caption = `${data.hits.length} hits for “${view.query}”`;
    } else {
      const paging = `page=${view.page}&page_size=${PAGE_SIZE}&newest_first=1`;
      const path =
        view.kind === 'archive'
          ? `agents/${agent}/archives/${encodeURIComponent(view.file)}?${paging}`
          : `agents/${agent}?${paging}`;
      pager = await api<IPage>(path);
      messages = pager.messages;
      const first = pager.page * pager.page_size;
      const range = pager.total
        ? `${first + 1}–${first + messages.length} of ${pager.total}, newest first`
        : 'no messages';
      caption = view.kind === 'archive' ? `Archive ${view.file}: ${range}` : `Memory: ${range}`;
    }
    const { archives } = await api<{ archives: IArchive[] }>(`agents/${agent}/archives`);
    if (generation !== this.generation) {
      return;
    }
    this.detailTitle.textContent = name;
    this.renderViewBar(caption, pager);
    const key = JSON.stringify([name, view, messages]);
    if (key !== this.rendered) {
      this.rendered = key;
      await this.renderMessages(messages);
    }
    const archivesKey = JSON.stringify([name, view, archives]);
    if (archivesKey !== this.renderedArchives) {
      this.renderedArchives = archivesKey;
      this.renderArchives(archives);
    }
  }

  private renderViewBar(caption: string, pager: IPage | null): void {
    const view = this.view;
    const controls: HTMLElement[] = [el('span', 'jp-nbmemory-caption', caption)];
    if (view.kind !== 'memory') {
      controls.push(button('Back to memory', 'Show the live memory', () => {
        this.search.value = '';
        this.setView({ kind: 'memory', page: 0 });
      }));
    }
    if (pager && view.kind !== 'search') {
      const newer = button('Newer', 'Newer messages', () =>
        this.setView({ ...view, page: view.page - 1 })
      );
      const older = button('Older', 'Older messages', () =>
        this.setView({ ...view, page: view.page + 1 })
      );
      newer.disabled = pager.page === 0;
      older.disabled = (pager.page + 1) * pager.page_size >= pager.total;
      controls.push(newer, older);
    }
    this.viewBar.replaceChildren(...controls);
  }

  private async renderMessages(messages: IMessage[]): Promise<void> {
    const items = messages.map(message => {
      const item = el('li', 'jp-nbmemory-message', undefined, {
        'data-testid': 'nbmemory-message',
        'data-role': message.role.toLowerCase()
      });
      const meta = el('div', 'jp-nbmemory-message-meta');
      meta.append(
        el('span', 'jp-nbmemory-role', message.role),
        el('span', 'jp-nbmemory-when', `#${message.index} ${message.timestamp}`)
      );
      if (message.source) {
        meta.append(el('span', 'jp-nbmemory-source', message.source));
      }
      const body = el('div', 'jp-nbmemory-message-body jp-RenderedMarkdown');
      item.append(meta, body);
      return { body, source: message.content };
    });
    this.messageList.replaceChildren(...items.map(i => i.body.parentElement!));
    if (!messages.length) {
      this.messageList.append(el('li', 'jp-nbmemory-empty', 'Nothing here.'));
    }
    await Promise.all(
      items.map(({ body, source }) =>
        renderMarkdown({
          host: body,
          source,
          trusted: false,
          sanitizer: this.sanitizer,
          resolver: null,
          linkHandler: null,
          shouldTypeset: false,
          latexTypesetter: null,
          markdownParser: this.markdownParser
        })
      )
    );
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
            this.setView({ kind: 'archive', file: archive.name, page: 0 })
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

  private readonly status: HTMLElement;
  private readonly agentList: HTMLUListElement;
  private readonly detail: HTMLElement;
  private readonly detailTitle: HTMLElement;
  private readonly viewBar: HTMLElement;
  private readonly messageList: HTMLOListElement;
  private readonly archiveList: HTMLUListElement;
  private readonly search: HTMLInputElement;
  private readonly searchArchives: HTMLInputElement;
  private selected: string | null = null;
  private view: View = { kind: 'memory', page: 0 };
  private generation = 0;
  private rendered = '';
  private renderedArchives = '';
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
