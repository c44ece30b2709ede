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
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import { Toolbar, listIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel, SplitPanel, Widget } from '@lumino/widgets';

import {
  Api,
  IAgent,
  IAgents,
  ICompaction,
  IItem,
  IMessageTokens,
  INotes,
  IPage,
  agentPath,
  query,
  reason
} from './api';
import { anyCase, button, el, foldNote, listMove, markText, number, percent, plural } from './dom';
import { keepingFocus, pageCount, pager } from './pager';
import { TextRenderer } from './render';
import { MEMORY_FILE, Targets } from './targets';
import { CompactionTimeline, CompactionView } from './timeline';
import { ContextXray } from './xray';

export const PANEL_ID = 'nbmemory-panel';
export const PAGE_SIZE = 20;

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

/** The server's `MIN_POLL_INTERVAL`: a shorter interval is raised to it. */
const MIN_POLL_SECONDS = 0.5;
/** Until the server says otherwise (`NbMemoryServer.poll_interval`). */
const DEFAULT_POLL_SECONDS = 3;

/** The message list: MEMORY.md or one archive, a page at a time, maybe one role only. */
interface IListView {
  archive: string | null;
  offset: number;
  role: string;
}

/** The search shown above the message list. */
interface ISearchView {
  query: string;
  archives: boolean;
  offset: number;
}

interface IRolePage extends IPage {
  roles?: { role: string; count: number }[];
}

/** One row of the agent list, kept across polls so focus and selection stay put. */
interface IAgentRow {
  row: HTMLLIElement;
  gauge: HTMLElement;
  bar: HTMLElement;
  mark: HTMLElement;
  figures: HTMLElement;
  key: string;
}

export interface IPanelOptions {
  renderer: TextRenderer;
  /** Where compaction views open (the main area; in Notebook 7, the area under it). */
  shell: JupyterFrontEnd.IShell;
}

/**
 * Give `widget` half the height of the vertical split it is in if its area there is under a
 * fifth of it: Notebook 7.6 opens the area under the document at its smallest, a tab bar
 * (7.7 gives it a quarter; a height the user chose is kept).
 */
function makeRoom(widget: Widget): void {
  for (let child = widget, split = widget.parent; split; child = split, split = split.parent) {
    if (!(split instanceof SplitPanel && split.orientation === 'vertical')) {
      continue;
    }
    const index = split.widgets.indexOf(child);
    const height = split.node.getBoundingClientRect().height;
    if (index >= 0 && child.node.getBoundingClientRect().height < height / 5) {
      const sizes = split.relativeSizes();
      const others = 1 - sizes[index];
      split.setRelativeSizes(
        sizes.map((size, i) =>
          i === index ? 0.5 : others > 0 ? (0.5 * size) / others : 0.5 / (sizes.length - 1)
        )
      );
    }
    return;
  }
}

export class MemoryPanel extends Panel {
  constructor(options: IPanelOptions) {
    super();
    this.renderer = options.renderer;
    this.shell = options.shell;
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
    this.polling = el('div', 'jp-nbmemory-polling', '', { 'data-testid': 'nbmemory-polling' });
    this.agentList = el('ul', 'jp-nbmemory-agents', undefined, {
      role: 'listbox',
      'aria-label': 'Agents'
    });
    this.agentList.addEventListener('keydown', event => this.onAgentKey(event));

    // Search: a form of its own; its results are a section apart from the message list.
    this.search = el('input', 'jp-mod-styled jp-nbmemory-search-input', undefined, {
      type: 'search',
      placeholder: 'Search messages (Enter)',
      'aria-label': 'Search messages',
      'data-testid': 'nbmemory-search'
    });
    this.searchArchives = el('input', '', undefined, { type: 'checkbox' });
    const archivesToo = el('label', 'jp-nbmemory-archives-too');
    archivesToo.append(this.searchArchives, ' archives too');
    const searchForm = el('form', 'jp-nbmemory-search', undefined, { role: 'search' });
    searchForm.append(this.search, archivesToo);
    searchForm.addEventListener('submit', event => {
      event.preventDefault();
      this.runSearch(this.search.value);
    });
    this.searchTitle = el('h4', 'jp-nbmemory-section-title', 'Search results');
    this.searchCaption = el('div', 'jp-nbmemory-caption', '', {
      role: 'status',
      'data-testid': 'nbmemory-search-caption'
    });
    this.searchPager = el('div', 'jp-nbmemory-pager-slot');
    this.searchList = el('ol', 'jp-nbmemory-messages', undefined, {
      'aria-label': 'Search results',
      'data-testid': 'nbmemory-search-results'
    });
    this.watchList(this.searchList, () => this.searchView, v => this.goSearch(v));
    const closeSearch = button(
      'Close search',
      'Close the search results',
      () => this.closeSearch(),
      'Close search'
    );
    const searchHead = el('div', 'jp-nbmemory-section-bar');
    searchHead.append(this.searchTitle, closeSearch);
    this.searchSection = el('section', 'jp-nbmemory-search-results', undefined, {
      'aria-label': 'Search results',
      'data-testid': 'nbmemory-search-section'
    });
    this.searchSection.append(searchHead, this.searchCaption, this.searchPager, this.searchList);
    this.searchSection.hidden = true;

    this.exact = el('input', '', undefined, {
      type: 'checkbox',
      'data-testid': 'nbmemory-exact'
    });
    this.exact.addEventListener('change', () => {
      this.dirty = true;
      void this.renderAllMessages();
      void this.renderNotes();
    });
    const exactLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: 'Show each message exactly as stored, with no Markdown'
    });
    exactLabel.append(this.exact, ' Exact text');
    this.showTokens = el('input', '', undefined, {
      type: 'checkbox',
      'data-testid': 'nbmemory-show-tokens'
    });
    this.showTokens.addEventListener('change', () => {
      void this.renderTokens(this.messageList);
      void this.renderTokens(this.searchList);
    });
    const tokensLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: "Show what each message adds to a request, counted with the agent's encoding"
    });
    tokensLabel.append(this.showTokens, ' Tokens per message');

    this.xray = new ContextXray();
    this.timeline = new CompactionTimeline(
      (compaction, position, count) => this.openCompaction(compaction, position, count),
      archive => this.showArchive(archive)
    );

    this.notesTitle = el('h4', 'jp-nbmemory-notes-title', 'Pinned notes');
    this.notesList = el('ol', 'jp-nbmemory-notes', undefined, {
      'data-testid': 'nbmemory-notes',
      'aria-label': 'Pinned notes'
    });
    this.notesStatus = el('div', 'jp-nbmemory-notes-status', '', {
      role: 'status',
      'data-testid': 'nbmemory-notes-status'
    });
    this.pinInput = el('input', 'jp-mod-styled jp-nbmemory-pin-input', undefined, {
      type: 'text',
      placeholder: 'A note to pin (in every request)',
      'aria-label': 'Note to pin',
      'data-testid': 'nbmemory-pin-input'
    });
    this.pinButton = el(
      'button',
      'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button',
      'Pin',
      {
        type: 'submit',
        title: 'Pin this note: every request carries it, no compaction removes it',
        'aria-label': 'Pin this note',
        'data-testid': 'nbmemory-pin'
      }
    );
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

    // The message list: MEMORY.md or an archive, filtered by role, a page at a time.
    this.listTitle = el('h4', 'jp-nbmemory-section-title', 'Memory');
    this.backToMemory = button(
      'Back to memory',
      'Show the live memory (MEMORY.md)',
      () => this.showArchive(null),
      'Back to memory'
    );
    this.backToMemory.hidden = true;
    this.roleSelect = el('select', 'jp-mod-styled jp-nbmemory-role', undefined, {
      'aria-label': 'Show the messages of one role',
      'data-testid': 'nbmemory-role'
    });
    this.roleSelect.addEventListener('change', () =>
      this.setList({ ...this.list, role: this.roleSelect.value, offset: 0 })
    );
    this.listCaption = el('div', 'jp-nbmemory-caption', '', {
      'data-testid': 'nbmemory-list-caption'
    });
    this.listPager = el('div', 'jp-nbmemory-pager-slot');
    this.messageList = el('ol', 'jp-nbmemory-messages', undefined, {
      'aria-label': 'Messages',
      'data-testid': 'nbmemory-messages'
    });
    this.watchList(this.messageList, () => this.list, v => this.setList(v));
    const listHead = el('div', 'jp-nbmemory-section-bar');
    listHead.append(this.listTitle, this.backToMemory);
    const listBar = el('div', 'jp-nbmemory-viewbar');
    listBar.append(this.listCaption, this.roleSelect);
    const listSection = el('section', 'jp-nbmemory-list', undefined, {
      'aria-label': 'Messages',
      'data-testid': 'nbmemory-list-section'
    });
    listSection.append(listHead, listBar, this.listPager, this.messageList);

    this.detailTitle = el('h3', 'jp-nbmemory-detail-title');
    this.detail = el('div', 'jp-nbmemory-detail');
    const titleBar = el('div', 'jp-nbmemory-detail-bar');
    titleBar.append(this.detailTitle, exactLabel, tokensLabel);
    this.detail.append(
      titleBar,
      this.xray.node,
      notesSection,
      searchForm,
      this.searchSection,
      listSection,
      this.timeline.node
    );
    this.detail.hidden = true;
    body.node.append(this.workspace, this.polling, this.status, this.agentList, this.detail);
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
    return this.list.archive;
  }

  /** The panel's settings; changing them reloads what depends on them. */
  get settings(): IPanelSettings {
    return this.options;
  }

  set settings(value: IPanelSettings) {
    const before = this.options;
    this.options = { ...value };
    if (before.searchArchives !== value.searchArchives && !this.searchView) {
      this.searchArchives.checked = value.searchArchives;
    }
    if (before.pollInterval !== value.pollInterval) {
      this.startPolling();
    }
    if (before.order !== value.order || before.foldLength !== value.foldLength) {
      this.list = { ...this.list, offset: 0 };
      this.full.clear();
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
      this.serverPoll = data.poll_interval;
      this.startPolling(false);
      const where = data.store === 'files' ? data.workspace : data.store;
      this.workspace.textContent =
        data.store === 'files' ? `Workspace: ${where}` : `Database: ${where}`;
      this.workspace.title = where;
      this.agents = data.agents;
      this.renderAgents(data.agents);
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
        this.status.textContent = data.agents.length
          ? ''
          : `No agents in ${where} yet.`;
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
      this.search.value = '';
      this.searchView = null;
      this.searchArchives.checked = this.options.searchArchives;
      this.full.clear();
      this.targets.forget(name);
      this.list = { archive: null, offset: 0, role: '' };
    }
    const changed = this.selected !== name;
    this.selected = name;
    this.dirty = true;
    if (changed) {
      this._selectionChanged.emit(name);
    }
    for (const [other, { row }] of this.rows) {
      row.setAttribute('aria-selected', String(other === name));
      row.tabIndex = other === name ? 0 : -1;
    }
    void this.refresh();
  }

  /** Show MEMORY.md (`null`) or an archive in the message list, from its first page. */
  showArchive(archive: string | null): void {
    if (archive && this.selected) {
      this.targets.archive = { agent: this.selected, archive };
    }
    this.setList({ archive, offset: 0, role: '' });
  }

  /** Go to the newest or oldest page of the message list, or to page `n` (from 1). */
  goTo(where: 'newest' | 'oldest' | number): void {
    const total = this.listTotal;
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
    this.setList({ ...this.list, offset });
  }

  /** How many pages the message list has now. */
  get listPages(): number {
    return pageCount(this.listTotal, PAGE_SIZE);
  }

  /** Put the focus on the agent list (on the selected agent, else the first), once listed. */
  async focusAgents(): Promise<void> {
    if (!this.agentList.children.length) {
      await this.refresh();
    }
    const rows = Array.from(this.agentList.children) as HTMLElement[];
    const row = rows.find(r => r.tabIndex === 0) ?? rows[0];
    if (row) {
      row.focus();
    } else {
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
    this.search.select();
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

  /** Seconds between polls: the setting, else the server's; 0 for none. */
  get pollSeconds(): number {
    const chosen = this.options.pollInterval;
    if (chosen === null) {
      return this.serverPoll;
    }
    return chosen <= 0 ? 0 : Math.max(MIN_POLL_SECONDS, chosen);
  }

  /** (Re)start the polling timer when the interval changed (or `force`). */
  private startPolling(force = true): void {
    const seconds = this.isVisible ? this.pollSeconds : 0;
    if (!force && seconds === this.timerSeconds) {
      return;
    }
    window.clearInterval(this.timer);
    this.timer = 0;
    this.timerSeconds = seconds;
    this.node.dataset.pollSeconds = String(seconds);
    const interval = this.pollSeconds;
    this.polling.textContent =
      interval > 0
        ? `Checks for changes every ${number(interval)} s` +
          (this.options.pollInterval === null ? ' (the server\'s setting)' : '')
        : 'Does not check for changes (off in the settings): use Refresh';
    if (seconds > 0) {
      this.timer = window.setInterval(() => {
        if (this.isVisible && !document.hidden) {
          void this.refresh();
        }
      }, seconds * 1000);
    }
  }

  private setList(list: IListView): void {
    this.list = list;
    this.dirty = true;
    void this.refresh();
  }

  private runSearch(text: string): void {
    const q = text.trim();
    if (!q) {
      this.closeSearch();
      return;
    }
    this.goSearch({ query: q, archives: this.searchArchives.checked, offset: 0 });
  }

  private goSearch(view: ISearchView): void {
    this.searchView = view;
    this.dirty = true;
    void this.refresh();
  }

  private closeSearch(): void {
    this.search.value = '';
    this.searchView = null;
    this.dirty = true;
    void this.refresh();
    this.search.focus();
  }

  // --------------------------------------------------------------------------------------------
  // The agent list: a listbox with one tab stop, arrow keys, Home and End

  private onAgentKey(event: KeyboardEvent): void {
    const rows = Array.from(this.agentList.children) as HTMLElement[];
    const at = rows.indexOf(document.activeElement as HTMLElement);
    if (event.key === 'Enter' || event.key === ' ') {
      if (at >= 0 && rows[at].dataset.name) {
        event.preventDefault();
        this.select(rows[at].dataset.name);
      }
      return;
    }
    const next = listMove(event.key, at, rows.length);
    if (next === -1) {
      return;
    }
    event.preventDefault();
    const row = rows[next];
    if (row?.dataset.name) {
      row.focus();
      this.select(row.dataset.name); // selection follows focus
    }
  }

  /** Update the rows in place: a row is made once per agent and changed only when its figures do. */
  private renderAgents(agents: IAgent[]): void {
    const active = document.activeElement as HTMLElement | null;
    const focusedRow = active && this.agentList.contains(active) ? active : null;
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
      const here = this.agentList.children[position];
      if (here !== entry.row) {
        // Agents come sorted, so a new row goes in between and existing rows stay put.
        this.agentList.insertBefore(entry.row, here ?? null);
      }
    });
    // One tab stop: the selected row, else the first.
    const stop = this.selected && names.has(this.selected) ? this.selected : agents[0]?.name;
    for (const [name, { row }] of this.rows) {
      row.tabIndex = name === stop ? 0 : -1;
    }
    // Moving a focused element takes its focus away: should a focused row ever move (a name
    // that sorts differently), it gets the focus back; if its agent is gone, the focus stays
    // in the list.
    if (focusedRow && focusedRow.isConnected && document.activeElement !== focusedRow) {
      focusedRow.focus();
    } else if (focusedRow && !focusedRow.isConnected) {
      (Array.from(this.agentList.children) as HTMLElement[]).find(r => r.tabIndex === 0)?.focus();
    }
  }

  private makeRow(name: string): IAgentRow {
    const row = el('li', 'jp-nbmemory-agent', undefined, {
      role: 'option',
      tabindex: '-1',
      'aria-selected': String(name === this.selected),
      'data-testid': 'nbmemory-agent',
      'data-name': name,
      'data-key': `agent:${name}`
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
    const label = el('span', 'jp-nbmemory-agent-name', name);
    row.append(label, gauge, figures);
    row.addEventListener('click', () => this.select(name));
    row.addEventListener('contextmenu', () => {
      if (this.selected !== name) {
        this.select(name); // the context menu acts on the row it was opened on
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
    entry.gauge.setAttribute('aria-label', `${agent.name}: tokens of the next request`);
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
    entry.row.setAttribute('aria-label', `${agent.name}: ${entry.figures.textContent}`);
  }

  // --------------------------------------------------------------------------------------------
  // The selected agent

  private async loadDetail(name: string, generation: number): Promise<void> {
    const list = this.list;
    const newestFirst = this.options.order === 'newest';
    const fold = this.options.foldLength;
    const paging = query({
      offset: list.offset,
      limit: PAGE_SIZE,
      newest_first: newestFirst,
      fold,
      role: list.role || null
    });
    const path = list.archive
      ? agentPath(name, 'archives', list.archive) + paging
      : agentPath(name) + paging;
    const page = await this.api.get<IRolePage>(path);
    const search = this.searchView;
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
    // have been the one to fetch it, and the next one hears "not modified" (304). The notes are
    // compared by content: after a pin or unpin they show the POST's answer, which the next
    // GET repeats, and redrawing the list for nothing can swallow a click on an Unpin button.
    if (name !== this.notesAgent || JSON.stringify(notes.data) !== JSON.stringify(this.notes)) {
      this.notesStatus.textContent = name === this.notesAgent ? this.notesStatus.textContent : '';
      this.notes = notes.data;
      this.notesAgent = name;
      await this.renderNotes();
      if (generation !== this.generation) {
        return;
      }
    }
    const shown = { page: page.data, found: found?.data ?? null, compactions: compactions.data };
    const changed =
      this.dirty ||
      name !== this.shownAgent ||
      shown.page !== this.shown.page ||
      shown.found !== this.shown.found ||
      shown.compactions !== this.shown.compactions;
    if (!changed) {
      return; // a poll when nothing changed: leave the page (and the focus) as it is
    }
    this.dirty = false;
    this.shown = shown;
    this.shownAgent = name;
    this.itemsAgent = name;
    this.detailTitle.textContent = name;
    this.renderList(page.data);
    this.renderSearch(found?.data ?? null);
    await this.renderAllMessages();
    keepingFocus(this.timeline.node, () =>
      this.timeline.update(name, compactions.data.compactions, list.archive)
    );
  }

  private renderList(page: IRolePage): void {
    const list = this.list;
    this.listTotal = page.total;
    this.listItems = page.items;
    this.listTitle.textContent = list.archive ? `Archive ${list.archive}` : 'Memory (MEMORY.md)';
    this.backToMemory.hidden = list.archive === null;
    const newestFirst = this.options.order === 'newest';
    const order = newestFirst ? 'newest first' : 'oldest first';
    const { total, offset, items } = page;
    const role = list.role ? ` by ${list.role}` : '';
    this.listCaption.textContent = total
      ? `${number(offset + 1)}–${number(offset + items.length)} of ` +
        `${plural(total, 'message')}${role}, ${order}`
      : list.role
        ? `No messages by ${list.role}.`
        : 'No messages.';
    // Roles: the file's, with counts; the chosen one stays even when it has none left.
    const roles = page.roles ?? [];
    const options = [el('option', '', 'All roles', { value: '' })];
    for (const { role: name, count } of roles) {
      options.push(el('option', '', `${name} (${number(count)})`, { value: name }));
    }
    if (list.role && !roles.some(r => r.role === list.role)) {
      options.push(el('option', '', `${list.role} (0)`, { value: list.role }));
    }
    keepingFocus(this.roleSelect.parentElement!, () => {
      this.roleSelect.replaceChildren(...options);
      this.roleSelect.value = list.role;
    });
    keepingFocus(this.listPager, () =>
      this.listPager.replaceChildren(
        pager({
          total,
          offset,
          size: PAGE_SIZE,
          labels: newestFirst
            ? ['Newest', 'Newer', 'Older', 'Oldest']
            : ['Oldest', 'Older', 'Newer', 'Newest'],
          what: 'messages',
          go: at => this.setList({ ...this.list, offset: at })
        })
      )
    );
  }

  private renderSearch(found: IPage | null): void {
    const view = this.searchView;
    this.searchSection.hidden = !view || !found;
    if (!view || !found) {
      this.searchItems = [];
      return;
    }
    this.searchItems = found.items;
    const where = view.archives ? 'MEMORY.md and the archives' : 'MEMORY.md';
    const role = this.list.role ? ` (messages by ${this.list.role})` : '';
    const { total, offset, items } = found;
    this.searchTitle.textContent = `Search results for “${view.query}”`;
    this.searchCaption.textContent = total
      ? `${plural(total, 'hit')} in ${where}${role}; ${number(offset + 1)}–` +
        `${number(offset + items.length)} shown`
      : `No results for “${view.query}” in ${where}${role}.` +
        (view.archives ? '' : ' Tick “archives too” to look in the archives.');
    this.searchSection.dataset.total = String(total);
    keepingFocus(this.searchPager, () =>
      this.searchPager.replaceChildren(
        pager({
          total,
          offset,
          size: PAGE_SIZE,
          labels: ['First', 'Previous', 'Next', 'Last'],
          what: 'hits',
          go: at => this.goSearch({ ...view, offset: at })
        })
      )
    );
  }

  // --------------------------------------------------------------------------------------------
  // Messages

  private fullKey(source: string, index: number): string {
    return `${this.itemsAgent}\u0000${source}\u0000${index}`;
  }

  private async renderAllMessages(): Promise<void> {
    const rendered = ++this.renderGeneration;
    await Promise.all([
      this.renderMessages(this.messageList, this.listItems, rendered, null),
      this.renderMessages(this.searchList, this.searchItems, rendered, this.searchView?.query ?? null)
    ]);
  }

  /** Fill `list` with cards for `items`; `highlight` marks the search's matches. */
  private async renderMessages(
    list: HTMLOListElement,
    items: IItem[],
    rendered: number,
    highlight: string | null
  ): Promise<void> {
    const cards = items.map(item => this.card(item, highlight));
    keepingFocus(list, () => {
      list.replaceChildren(...cards.map(c => c.card));
      if (!items.length) {
        list.append(el('li', 'jp-nbmemory-empty', 'Nothing here.'));
      }
    });
    // One tab stop per list (the focused card, else the first); arrow keys move inside.
    const focused = cards.find(c => c.card === document.activeElement) ?? cards[0];
    if (focused) {
      focused.card.tabIndex = 0;
    }
    if (this.focusFirstCardOf === list && cards.length) {
      this.focusFirstCardOf = null; // a page turned from the keyboard: on to its first message
      cards.forEach((c, i) => (c.card.tabIndex = i === 0 ? 0 : -1));
      cards[0].card.focus();
    }
    await Promise.all(cards.map(c => c.fill(rendered)));
    await this.renderTokens(list);
  }

  /** A message card; `fill` renders its body (Markdown, or the exact text). */
  private card(
    item: IItem,
    highlight: string | null
  ): { card: HTMLLIElement; fill: (r: number) => Promise<void> } {
    const card = el('li', 'jp-nbmemory-message', undefined, {
      'data-testid': 'nbmemory-message',
      'data-agent': this.itemsAgent,
      'data-role': item.role,
      'data-index': String(item.index),
      'data-source': item.source,
      'data-key': `${item.source}#${item.index}`,
      tabindex: '-1',
      'aria-label': `${item.role}, message ${item.index} of ${item.source}, ${item.timestamp}`
    });
    const meta = el('div', 'jp-nbmemory-message-meta');
    meta.append(
      el('span', 'jp-nbmemory-role', item.role),
      el('span', 'jp-nbmemory-when', `#${item.index} ${item.timestamp}`),
      el('span', 'jp-nbmemory-message-tokens', '', { 'data-testid': 'nbmemory-message-tokens' })
    );
    if (item.source !== MEMORY_FILE || highlight !== null) {
      meta.append(el('span', 'jp-nbmemory-source', item.source));
    }
    const body = el('div', 'jp-nbmemory-message-body', undefined, {
      'data-testid': 'nbmemory-message-body'
    });
    card.append(meta, body);
    const full = this.full.get(this.fullKey(item.source, item.index));
    const text = full ?? item.text;
    if (item.folded && full === undefined) {
      const note = foldNote(item.text.length, item.length, () => void this.showFull(item, note));
      card.append(note);
    }
    const fill = async (rendered: number) => {
      if (rendered === this.renderGeneration) {
        await this.renderer.render(body, text, this.exact.checked);
        if (highlight) {
          const hits = markText(body, [[highlight, anyCase(highlight)]], 'jp-nbmemory-hit');
          card.dataset.hits = String(hits);
        }
      }
    };
    return { card, fill };
  }

  /**
   * Keyboard in a message list: arrow keys, Home and End move between cards; Page Up and Page
   * Down turn the page and focus its first card.
   */
  private watchList<V extends { offset: number }>(
    list: HTMLOListElement,
    current: () => V | null,
    go: (view: V) => void
  ): void {
    list.addEventListener('keydown', event => {
      const cards = Array.from(list.querySelectorAll<HTMLElement>('.jp-nbmemory-message'));
      const at = cards.indexOf(document.activeElement as HTMLElement);
      const view = current();
      if (event.key === 'PageDown' || event.key === 'PageUp') {
        if (!view) {
          return;
        }
        event.preventDefault();
        const step = event.key === 'PageDown' ? PAGE_SIZE : -PAGE_SIZE;
        const total =
          list === this.messageList
            ? this.listTotal
            : Number(this.searchSection.dataset.total ?? 0);
        const offset = view.offset + step;
        if (offset >= 0 && offset < total) {
          this.focusFirstCardOf = list;
          go({ ...view, offset });
        }
        return;
      }
      const next = listMove(event.key, at, cards.length);
      if (at === -1 || next === -1 || !cards[next]) {
        return;
      }
      event.preventDefault();
      for (const card of cards) {
        card.tabIndex = -1;
      }
      cards[next].tabIndex = 0;
      cards[next].focus();
    });
  }

  /** With "Tokens per message" on, ask the server what each shown message adds to a request. */
  private async renderTokens(list: HTMLOListElement): Promise<void> {
    const cards = Array.from(list.querySelectorAll<HTMLElement>('.jp-nbmemory-message'));
    if (!this.showTokens.checked) {
      for (const card of cards) {
        const slot = card.querySelector<HTMLElement>('.jp-nbmemory-message-tokens');
        if (slot) {
          slot.textContent = '';
        }
      }
      return;
    }
    const name = this.itemsAgent;
    const bySource = new Map<string, HTMLElement[]>();
    for (const card of cards) {
      const source = card.dataset.source ?? MEMORY_FILE;
      bySource.set(source, [...(bySource.get(source) ?? []), card]);
    }
    for (const [source, group] of bySource) {
      try {
        const { data } = await this.api.get<IMessageTokens>(
          agentPath(name, 'tokens') +
            query({
              indexes: group.map(card => card.dataset.index).join(','),
              archive: source === MEMORY_FILE ? null : source
            })
        );
        if (name !== this.itemsAgent || !this.showTokens.checked) {
          return;
        }
        for (const card of group) {
          const count = data.tokens[card.dataset.index ?? ''];
          const slot = card.querySelector<HTMLElement>('.jp-nbmemory-message-tokens');
          if (slot && count !== undefined) {
            slot.textContent = plural(count, 'token');
            slot.title = `What this message adds to a request (${data.encoding})`;
            slot.dataset.tokens = String(count);
          }
        }
      } catch (error) {
        this.status.textContent = `Could not count tokens: ${reason(error)}`;
      }
    }
  }

  private async showFull(item: IItem, note: HTMLElement): Promise<void> {
    const name = this.itemsAgent;
    const archive = item.source === MEMORY_FILE ? null : item.source;
    note.replaceChildren(el('span', 'jp-nbmemory-fold-text', 'Loading the full text…'));
    try {
      const { data } = await this.api.get<IItem>(
        agentPath(name, 'messages', String(item.index)) + query({ archive })
      );
      if (name !== this.itemsAgent) {
        return;
      }
      this.full.set(this.fullKey(item.source, item.index), data.text);
      const card = note.parentElement;
      const body = card?.querySelector<HTMLElement>('.jp-nbmemory-message-body');
      note.remove();
      if (body) {
        await this.renderer.render(body, data.text, this.exact.checked);
        const inSearch = card?.closest('.jp-nbmemory-search-results');
        const highlight = inSearch ? this.searchView?.query : null;
        if (highlight) {
          markText(body, [[highlight, anyCase(highlight)]], 'jp-nbmemory-hit');
        }
      }
    } catch (error) {
      note.replaceChildren(
        el('span', 'jp-nbmemory-fold-text', `Could not load it: ${reason(error)}`)
      );
    }
  }

  // --------------------------------------------------------------------------------------------
  // Pinned notes

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
      const unpin = button(
        'Unpin',
        `Unpin note ${i + 1}`,
        () => void this.unpin(i + 1, text),
        `Unpin note ${i + 1}`
      );
      unpin.dataset.testid = 'nbmemory-unpin';
      unpin.dataset.key = `unpin:${i + 1}`;
      unpin.disabled = this.notesBusy;
      row.append(body, unpin);
      bodies.push([body, text]);
      return row;
    });
    keepingFocus(this.notesList, () => {
      this.notesList.replaceChildren(...rows);
      if (!rows.length) {
        this.notesList.append(el('li', 'jp-nbmemory-empty', 'No pinned notes.'));
      }
    });
    for (const [body, text] of bodies) {
      if (rendered !== this.notesGeneration) {
        return;
      }
      await this.renderer.render(body, text, this.exact.checked);
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
      const data = await this.api.post<INotes>(agentPath(name, 'notes'), body);
      if (name === this.notesAgent) {
        this.notes = data;
      }
      return true;
    } catch (error) {
      this.notesStatus.textContent = `${refused}: ${reason(error)}`;
      return false;
    } finally {
      this.notesBusy = false;
      this.pinButton.disabled = false;
      // The agent's figures include the notes. Refreshing before anything is awaited also makes
      // a refresh under way, which read the notes before this change, give up instead of
      // showing them (`refresh` counts its generation synchronously).
      void this.refresh();
      await this.renderNotes();
    }
  }

  // --------------------------------------------------------------------------------------------
  // Compactions

  /** Open (or bring forward) the view of one compaction of the selected agent. */
  private openCompaction(compaction: ICompaction, position: number, count: number): void {
    const agent = this.shownAgent;
    this.targets.archive = { agent, archive: compaction.archive };
    const id = CompactionView.idFor(agent, compaction.archive);
    const open = this.views.get(id);
    if (open && !open.isDisposed) {
      this.shell.activateById(open.id);
      return;
    }
    const view = new CompactionView(this.api, this.renderer, agent, compaction, position, count);
    this.targets.watch(view.node);
    const main = new MainAreaWidget({ content: view });
    main.id = `${id}:main`;
    main.title.label = view.title.label;
    main.title.caption = view.title.caption;
    main.title.icon = listIcon;
    main.title.closable = true;
    this.views.set(id, main);
    main.disposed.connect(() => this.views.delete(id));
    // Notebook 7's main area holds its one document and ignores anything added to it: the view
    // goes to the area under it then (where Notebook 7 shows the log console).
    for (const area of ['main', 'down'] as const) {
      this.shell.add(main, area);
      if (this.holds(area, main)) {
        this.shell.activateById(main.id);
        if (area === 'down') {
          requestAnimationFrame(() => makeRoom(main)); // once the shell has laid it out
        }
        void view.load();
        return;
      }
    }
    main.dispose();
    Notification.error(
      `This Jupyter front end has no room for the view of ${agent}'s compaction ` +
        `${position + 1}: its archive is ${compaction.archive}.`,
      { autoClose: 8000 }
    );
  }

  /** Whether the shell's `area` holds `widget` (a shell may refuse or ignore an `add`). */
  private holds(area: 'main' | 'down', widget: Widget): boolean {
    for (const shown of this.shell.widgets(area)) {
      if (shown === widget) {
        return true;
      }
    }
    return false;
  }

  private readonly _selectionChanged = new Signal<this, string | null>(this);
  private readonly renderer: TextRenderer;
  private readonly shell: JupyterFrontEnd.IShell;
  private readonly timeline: CompactionTimeline;
  /** Compaction views open in the main area (or the down area), by id. */
  private readonly views = new Map<string, MainAreaWidget>();
  private readonly workspace: HTMLElement;
  private readonly status: HTMLElement;
  private readonly polling: HTMLElement;
  private readonly agentList: HTMLUListElement;
  private readonly rows = new Map<string, IAgentRow>();
  private agents: IAgent[] = [];
  private readonly detail: HTMLElement;
  private readonly detailTitle: HTMLElement;
  private readonly xray: ContextXray;
  private readonly listTitle: HTMLElement;
  private readonly backToMemory: HTMLButtonElement;
  private readonly roleSelect: HTMLSelectElement;
  private readonly listCaption: HTMLElement;
  private readonly listPager: HTMLElement;
  private readonly messageList: HTMLOListElement;
  private readonly searchSection: HTMLElement;
  private readonly searchTitle: HTMLElement;
  private readonly searchCaption: HTMLElement;
  private readonly searchPager: HTMLElement;
  private readonly searchList: HTMLOListElement;
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
  private readonly showTokens: HTMLInputElement;
  /** Whole texts loaded with "Show full text", by agent, file and index. */
  private readonly full = new Map<string, string>();
  private options: IPanelSettings = { ...DEFAULT_SETTINGS };
  private selected: string | null = null;
  private list: IListView = { archive: null, offset: 0, role: '' };
  private listTotal = 0;
  private listItems: IItem[] = [];
  private searchView: ISearchView | null = null;
  private searchItems: IItem[] = [];
  private focusFirstCardOf: HTMLOListElement | null = null;
  private itemsAgent = '';
  private shownAgent = '';
  /** The answers the detail was last drawn from (the Api's objects: a 304 gives the same). */
  private shown: {
    page: IPage | null;
    found: IPage | null;
    compactions: { compactions: ICompaction[] } | null;
  } = { page: null, found: null, compactions: null };
  private dirty = true;
  private generation = 0;
  private renderGeneration = 0;
  private serverPoll = DEFAULT_POLL_SECONDS;
  private timer = 0;
  private timerSeconds = -1;
}
