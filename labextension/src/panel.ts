/**
 * The "Agent Memory" sidebar: nbmemory agents, their messages, archives and search, read from
 * the server extension's REST API (`<base_url>/nbmemory/api`).
 *
 * Every figure is the server's (the read model's): each agent's gauge is drawn against its own
 * context window with its own compression threshold marked, and the context X-ray splits the
 * selected agent's next request into its parts. The panel polls with `If-None-Match`, so a poll
 * when nothing changed is a 304 with no body and leaves the page (and the focus) as it is.
 * Message text is untrusted: it is rendered as Markdown with raw HTML escaped and no images, or,
 * with "Exact text", shown verbatim in a <pre>; search hits are marked by splitting text nodes.
 *
 * The selected agent's pinned notes (NOTES.md: in every request, never compacted) are listed
 * with an Unpin button each and a field to pin a new one (`POST .../notes`, the "write" action);
 * note text is untrusted too and rendered the same way as messages.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Toolbar, listIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import { Api, IAgent, IAgents, ICompaction, IPage, agentPath, query, reason } from './api';
import { label, setVocabulary } from './views/vocabulary';
import { AgentList } from './agents';
import { MessageCards, PAGE_SIZE } from './cards';
import { CellOpener } from './cells';
import { button } from './dom';
import { CompactionViews } from './compactions';
import { el, keepingFocus } from './views/dom';
import { CompactionTimeline } from './views/timeline';
import { IRolePage, MessageList } from './messages';
import { PinnedNotes } from './notes';
import { INotes } from './views/noteData';
import { Poller } from './polling';
import { TextRenderer } from './render';
import { SearchSection } from './search';
import { IMessageRef, Targets } from './targets';
import { pageCount } from './views/paging';
import { ContextXray } from './views/xray';

export const PANEL_ID = 'nbmemory-panel';

/** The panel's settings (the `nbmemory:plugin` settings of JupyterLab). */
export interface IPanelSettings {
  /** Seconds between polls; `null`: the server's `poll_interval`; 0: no polling. */
  pollInterval: number | null;
  /** Messages longer than this many characters come folded. */
  foldLength: number;
  /** Newest or oldest message first. */
  order: 'newest' | 'oldest';
  /** Whether a new search looks in the archives too. */
  searchArchives: boolean;
}

export const DEFAULT_SETTINGS: IPanelSettings = {
  pollInterval: null,
  foldLength: 2000,
  order: 'newest',
  searchArchives: false
};

export interface IPanelOptions {
  renderer: TextRenderer;
  /** Goes to the notebook cell a message came from (none: a card's cell is plain text). */
  openCell?: CellOpener;
  /** Where compaction views open (the main area; in Notebook 7, the area under it). */
  shell: JupyterFrontEnd.IShell;
  /** Copies a message's whole stored text (a card's Copy button). */
  copyMessage: (message: IMessageRef) => void;
}

/** The server's answers the detail is drawn from (the Api's objects: a 304 gives the same). */
interface IDetail {
  page: IRolePage;
  found: IPage | null;
  compactions: { compactions: ICompaction[] };
}

/**
 * The sidebar: the agent list (`agents.ts`) and, for the selected agent, its context X-ray
 * (`views/xray.ts`), pinned notes (`notes.ts`), search (`search.ts`), message list (`messages.ts`,
 * its cards `cards.ts`) and compactions (`views/timeline.ts`, opened by `compactions.ts`), kept
 * up to date by polling (`polling.ts`). The panel holds what is selected and shown, and refreshes.
 */
export class MemoryPanel extends Panel {
  constructor(options: IPanelOptions) {
    super();
    this.id = PANEL_ID;
    this.addClass('jp-nbmemory-panel');
    this.node.dataset.testid = PANEL_ID;
    this.title.icon = listIcon;
    this.title.caption = 'Agent Memory';

    const header = new Widget({ node: el('h2', 'jp-nbmemory-title', 'Agent Memory') });
    this.toolbar = new Toolbar();
    this.toolbar.addClass('jp-nbmemory-toolbar');
    this.toolbar.node.setAttribute('aria-label', 'Agent Memory actions');
    const body = new Widget();
    body.addClass('jp-nbmemory-body');
    this.addWidget(header);
    this.addWidget(this.toolbar);
    this.addWidget(body);
    this.targets.watch(this.node);

    this.workspace = el('div', 'jp-nbmemory-workspace', '', {
      'data-testid': 'nbmemory-workspace'
    });
    this.status = el('div', 'jp-nbmemory-status', '', { role: 'status' });
    this.poller = new Poller(
      this,
      () => void this.refresh(),
      () => this.options.pollInterval
    );
    this.agentList = new AgentList(
      name => this.select(name),
      () => this.selected
    );
    this.detail = this.makeDetail(options);
    body.node.append(
      this.workspace,
      this.poller.node,
      this.status,
      this.agentList.node,
      this.detail
    );
  }

  readonly toolbar: Toolbar;
  readonly api = new Api();

  /** The selected agent changed (or was deselected). */
  get selectionChanged(): ISignal<this, string | null> {
    return this._selectionChanged;
  }

  /** The message and archive the commands act on. */
  readonly targets = new Targets();

  /** The selected agent's latest figures, or null. */
  get selectedAgent(): IAgent | null {
    return this.agents.find(a => a.name === this.selected) ?? null;
  }

  /** The archive shown in the message list, if one is. */
  get shownArchive(): string | null {
    return this.messages.view.archive;
  }

  /** The panel's settings; changing them reloads what depends on them. */
  get settings(): IPanelSettings {
    return this.options;
  }

  set settings(value: IPanelSettings) {
    const before = this.options;
    this.options = { ...value };
    if (before.searchArchives !== value.searchArchives) {
      this.search.archivesDefault = value.searchArchives;
    }
    if (before.pollInterval !== value.pollInterval) {
      this.poller.start();
    }
    if (before.order !== value.order || before.foldLength !== value.foldLength) {
      this.messages.view = { ...this.messages.view, offset: 0 };
      this.cards.clearFull();
      this.dirty = true;
      void this.refresh();
    }
  }

  /** Reload the agent list and the selected agent's current view (unchanged parts stay). */
  async refresh(): Promise<void> {
    const generation = ++this.generation;
    try {
      const { data } = await this.api.get<IAgents>('agents');
      if (generation !== this.generation) {
        return;
      }
      this.poller.serverSeconds = data.poll_interval;
      this.poller.start(false);
      const where = data.store === 'files' ? data.workspace : data.store;
      this.workspace.textContent =
        data.store === 'files' ? `Workspace: ${where}` : `Database: ${where}`;
      this.workspace.title = where;
      setVocabulary(data.vocabulary);
      this.agents = data.agents;
      this.agentList.update(data.agents);
      const selected = data.agents.find(a => a.name === this.selected);
      if (!selected && this.selected !== null) {
        this.selected = null;
        this._selectionChanged.emit(null);
      }
      this.detail.hidden = !selected;
      if (selected) {
        this.xray.update(selected);
        await this.loadDetail(selected.name, generation);
      }
      if (generation === this.generation) {
        this.status.textContent = !data.agents.length
          ? `No agents in ${where} yet.`
          : selected
            ? ''
            : label('no agent', 'Select an agent to see its memory.');
      }
    } catch (error) {
      if (generation === this.generation) {
        this.status.textContent = `Could not reach the nbmemory server extension: ${reason(error)}`;
      }
    }
  }

  /** Select agent `name` (its memory, newest page first). */
  select(name: string): void {
    if (name !== this.selected) {
      this.search.reset(this.options.searchArchives);
      this.cards.clearFull();
      this.targets.forget(name);
      this.messages.view = { archive: null, offset: 0, role: '' };
    }
    const changed = this.selected !== name;
    this.selected = name;
    this.dirty = true;
    if (changed) {
      this._selectionChanged.emit(name);
    }
    this.agentList.markSelected(name);
    void this.refresh();
  }

  /** Show MEMORY.md (`null`) or an archive in the message list, from its first page. */
  showArchive(archive: string | null): void {
    if (archive && this.selected) {
      this.targets.archive = { agent: this.selected, archive };
    }
    this.messages.go({ archive, offset: 0, role: '' });
  }

  /** Go to the newest or oldest page of the message list, or to page `n` (from 1). */
  goTo(where: 'newest' | 'oldest' | number): void {
    const total = this.messages.total;
    const last = (pageCount(total, PAGE_SIZE) - 1) * PAGE_SIZE;
    const newestFirst = this.options.order === 'newest';
    let offset: number;
    if (where === 'newest') {
      offset = newestFirst ? 0 : last;
    } else if (where === 'oldest') {
      offset = newestFirst ? last : 0;
    } else {
      offset = Math.min(last, Math.max(0, (Math.round(where) - 1) * PAGE_SIZE));
    }
    this.messages.go({ ...this.messages.view, offset });
  }

  /** How many pages the message list has now. */
  get listPages(): number {
    return pageCount(this.messages.total, PAGE_SIZE);
  }

  /** Put the focus on the agent list (on the selected agent, else the first), once listed. */
  async focusAgents(): Promise<void> {
    if (this.agentList.isEmpty) {
      await this.refresh();
    }
    if (!this.agentList.focus()) {
      this.toolbar.node.querySelector<HTMLElement>('button')?.focus();
    }
  }

  /** Activated (from a command, the keyboard): the focus goes into the panel. */
  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    if (!this.node.contains(document.activeElement)) {
      void this.focusAgents();
    }
  }

  /** Put the focus in the search field. */
  focusSearch(): void {
    this.search.focus();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
    this.poller.start();
  }

  protected onBeforeHide(msg: Message): void {
    this.poller.stop();
    super.onBeforeHide(msg);
  }

  dispose(): void {
    this.poller.stop();
    super.dispose();
  }

  /** Seconds between polls: the setting, else the server's; 0 for none. */
  get pollSeconds(): number {
    return this.poller.seconds;
  }

  /** The selected agent's part: its name, the display options, and each view of it. */
  private makeDetail(options: IPanelOptions): HTMLElement {
    const redraw = () => {
      this.dirty = true;
      void this.refresh();
    };
    this.cards = new MessageCards({
      api: this.api,
      status: this.status,
      copy: message => {
        this.targets.message = message;
        options.copyMessage(message);
      },
      searchQuery: () => this.search.view?.query ?? null,
      exactChanged: () => {
        this.dirty = true;
        void this.renderAllMessages();
        void this.notes.render();
      },
      openCell: options.openCell ?? null,
      tokensChanged: () => {
        void this.cards.renderTokens(this.messages.list);
        void this.cards.renderTokens(this.search.list);
      }
    });
    this.search = new SearchSection(this.cards, redraw);
    this.xray = new ContextXray('jp-nbmemory-xray');
    const views = new CompactionViews(
      options.shell,
      this.api,
      options.renderer,
      this.targets,
      (agent, archive) => {
        if (agent === this.shownAgent) {
          this.timeline.focusRow(archive);
        }
      },
      options.openCell ?? null
    );
    this.timeline = new CompactionTimeline<ICompaction>({
      open: (compaction, position, count) =>
        views.open(this.shownAgent, compaction, position, count),
      extras: ({ archive }) => {
        const show = button(
          'Show archive',
          `Show ${archive} in the message list`,
          () => this.showArchive(archive),
          `Show archive ${archive}`
        );
        show.dataset.key = `show:${archive}`;
        return [show];
      }
    });
    this.notes = new PinnedNotes(
      this.api,
      options.renderer,
      () => this.cards.exact.checked,
      () => void this.refresh()
    );
    this.messages = new MessageList(this.cards, redraw, () => this.showArchive(null));
    this.detailTitle = el('h3', 'jp-nbmemory-detail-title');
    const detail = el('div', 'jp-nbmemory-detail');
    const titleBar = el('div', 'jp-nbmemory-detail-bar');
    titleBar.append(this.detailTitle, ...this.cards.labels);
    detail.append(
      titleBar,
      this.xray.node,
      this.notes.node,
      this.search.form,
      this.search.node,
      this.messages.node,
      this.timeline.node
    );
    detail.hidden = true;
    return detail;
  }

  /** Agent `name`'s message list, search, compactions and notes: fetched, then drawn. */
  private async loadDetail(name: string, generation: number): Promise<void> {
    const list = this.messages.view;
    const fold = this.options.foldLength;
    const paging = query({
      offset: list.offset,
      limit: PAGE_SIZE,
      newest_first: this.options.order === 'newest',
      fold,
      role: list.role || null
    });
    const path = list.archive
      ? agentPath(name, 'archives', list.archive) + paging
      : agentPath(name) + paging;
    const page = await this.api.get<IRolePage>(path);
    const search = this.search.view;
    const found = search
      ? await this.api.get<IPage>(
          agentPath(name, 'search') +
            query({
              q: search.query,
              archives: search.archives,
              offset: search.offset,
              limit: PAGE_SIZE,
              fold,
              role: list.role || null
            })
        )
      : null;
    const compactions = await this.api.get<{ compactions: ICompaction[] }>(
      agentPath(name, 'compactions')
    );
    const notes = await this.api.get<INotes>(agentPath(name, 'notes'));
    if (generation !== this.generation) {
      return; // the newer refresh gets what this one fetched from the Api's cache, and draws it
    }
    // Compared with what is shown, not with the last fetch: a refresh that gave up above may
    // have been the one to fetch it, and the next one hears "not modified" (304).
    if (this.notes.differ(name, notes.data)) {
      await this.notes.show(name, notes.data);
      if (generation !== this.generation) {
        return;
      }
    }
    const shown = { page: page.data, found: found?.data ?? null, compactions: compactions.data };
    await this.drawDetail(name, shown, list.archive);
  }

  /** Draw what `loadDetail` fetched, unless it is what is shown already. */
  private async drawDetail(name: string, shown: IDetail, archive: string | null): Promise<void> {
    const changed =
      this.dirty ||
      name !== this.shownAgent ||
      shown.page !== this.shown?.page ||
      shown.found !== this.shown?.found ||
      shown.compactions !== this.shown?.compactions;
    if (!changed) {
      return; // a poll when nothing changed: leave the page (and the focus) as it is
    }
    this.dirty = false;
    this.shown = shown;
    this.shownAgent = name;
    this.cards.agent = name;
    this.detailTitle.textContent = name;
    this.messages.render(shown.page, this.options.order === 'newest');
    this.search.render(shown.found, this.messages.view.role);
    await this.renderAllMessages();
    keepingFocus(this.timeline.node, () =>
      this.timeline.update(name, shown.compactions.compactions, archive)
    );
  }

  private async renderAllMessages(): Promise<void> {
    await this.cards.render([
      [this.messages.list, this.messages.items, null],
      [this.search.list, this.search.items, this.search.view?.query ?? null]
    ]);
  }

  private readonly _selectionChanged = new Signal<this, string | null>(this);
  private readonly workspace: HTMLElement;
  private readonly status: HTMLElement;
  private readonly poller: Poller;
  private readonly agentList: AgentList;
  private readonly detail: HTMLElement;
  private detailTitle!: HTMLElement;
  private xray!: ContextXray;
  private notes!: PinnedNotes;
  private search!: SearchSection;
  private messages!: MessageList;
  private cards!: MessageCards;
  private timeline!: CompactionTimeline<ICompaction>;
  private agents: IAgent[] = [];
  private options: IPanelSettings = { ...DEFAULT_SETTINGS };
  /** The agent selected, and the one whose detail is drawn. */
  private selected: string | null = null;
  private shownAgent = '';
  /** What the detail was last drawn from. */
  private shown: IDetail | null = null;
  /** Draw the detail at the next refresh even if the server's answers are the same. */
  private dirty = true;
  /** Counts refreshes: an older one gives up when a newer one started. */
  private generation = 0;
}
