/**
 * The "Agent Memory" sidebar: nbmemory agents, their messages, archives and search, read from
 * the server extension's REST API (`<base_url>/nbmemory/api`).
 *
 * Every figure is the server's (the read model's): each agent's gauge is drawn against its own
 * context window with its own compression threshold marked, and the context X-ray splits the
 * selected agent's next request into its parts. The panel polls at the server's
 * `poll_interval` with `If-None-Match`, so a poll when nothing changed is a 304 with no body and
 * leaves the page as it is. Message text is untrusted: it is rendered as Markdown with raw HTML
 * escaped and no images, or, with "Exact text", shown verbatim in a <pre>.
 *
 * The selected agent's pinned notes (NOTES.md: in every request, never compacted) are listed
 * with an Unpin button each and a field to pin a new one (`POST .../notes`, the "write" action);
 * note text is untrusted too and rendered the same way as messages.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { Toolbar, ToolbarButton, listIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import {
  Api,
  IAgent,
  IAgents,
  ICompaction,
  IFetched,
  IItem,
  IMessageTokens,
  INotes,
  IPage,
  agentPath,
  query,
  reason
} from './api';
import { button, el, number, percent, plural } from './dom';
import { TextRenderer } from './render';
import { CompactionTimeline, CompactionView } from './timeline';
import { ContextXray } from './xray';

export const PANEL_ID = 'nbmemory-panel';
/** Until the server says otherwise (`NbMemoryServer.poll_interval`). */
const DEFAULT_POLL_SECONDS = 3;
const PAGE_SIZE = 20;
const MEMORY_FILE = 'MEMORY.md';

/** What the detail area shows for the selected agent. */
type View =
  | { kind: 'memory'; offset: number }
  | { kind: 'archive'; file: string; offset: number }
  | { kind: 'search'; query: string; archives: boolean; offset: number };

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
  /** Where compaction views open (the main area). */
  shell: JupyterFrontEnd.IShell;
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

    this.toolbar = new Toolbar();
    this.toolbar.addClass('jp-nbmemory-toolbar');
    this.toolbar.addItem('title', new Widget({ node: el('h2', 'jp-nbmemory-title', 'Agent Memory') }));
    this.toolbar.addItem('spacer', Toolbar.createSpacerItem());
    this.toolbar.addItem(
      'refresh',
      new ToolbarButton({
        icon: refreshIcon,
        label: 'Refresh',
        tooltip: 'Reload agents and messages',
        onClick: () => void this.refresh()
      })
    );
    const body = new Widget();
    body.addClass('jp-nbmemory-body');
    this.addWidget(this.toolbar);
    this.addWidget(body);

    this.workspace = el('div', 'jp-nbmemory-workspace', '', {
      'data-testid': 'nbmemory-workspace'
    });
    this.status = el('div', 'jp-nbmemory-status', '', { role: 'status' });
    this.agentList = el('ul', 'jp-nbmemory-agents', undefined, {
      role: 'listbox',
      'aria-label': 'Agents'
    });

    this.search = el('input', 'jp-mod-styled jp-nbmemory-search-input', undefined, {
      type: 'search',
      placeholder: 'Search (Enter)',
      'aria-label': 'Search messages',
      'data-testid': 'nbmemory-search'
    });
    this.searchArchives = el('input', '', undefined, { type: 'checkbox' });
    const archivesToo = el('label', 'jp-nbmemory-archives-too');
    archivesToo.append(this.searchArchives, ' archives too');
    const form = el('form', 'jp-nbmemory-search', undefined, { role: 'search' });
    form.append(this.search, archivesToo);
    form.addEventListener('submit', event => {
      event.preventDefault();
      const text = this.search.value.trim();
      this.setView(
        text
          ? { kind: 'search', query: text, archives: this.searchArchives.checked, offset: 0 }
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
    this.showTokens = el('input', '', undefined, {
      type: 'checkbox',
      'data-testid': 'nbmemory-show-tokens'
    });
    this.showTokens.addEventListener('change', () => void this.renderTokens());
    const tokensLabel = el('label', 'jp-nbmemory-exact', undefined, {
      title: "Show what each message adds to a request, counted with the agent's encoding"
    });
    tokensLabel.append(this.showTokens, ' Tokens per message');

    this.xray = new ContextXray();
    this.timeline = new CompactionTimeline(
      (compaction, position, count) => this.openCompaction(compaction, position, count),
      archive => this.setView({ kind: 'archive', file: archive, offset: 0 })
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
    this.pinButton = el('button', 'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button', 'Pin', {
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
    this.messageList = el('ol', 'jp-nbmemory-messages', undefined, { 'aria-label': 'Messages' });
    this.detail = el('div', 'jp-nbmemory-detail');
    const titleBar = el('div', 'jp-nbmemory-detail-bar');
    titleBar.append(this.detailTitle, exactLabel, tokensLabel);
    this.detail.append(
      titleBar,
      this.xray.node,
      notesSection,
      form,
      this.viewBar,
      this.messageList,
      this.timeline.node
    );
    this.detail.hidden = true;
    body.node.append(this.workspace, this.status, this.agentList, this.detail);
  }

  readonly toolbar: Toolbar;

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
      const selected = data.agents.find(a => a.name === this.selected);
      if (!selected) {
        this.selected = null;
      }
      this.detail.hidden = !selected;
      if (selected) {
        this.xray.update(selected);
        await this.loadDetail(selected.name, generation);
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
  }

  private async loadDetail(name: string, generation: number): Promise<void> {
    const view = this.view;
    let page: IFetched<IPage>;
    let caption: string;
    if (view.kind === 'search') {
      const params = query({
        q: view.query,
        archives: view.archives,
        offset: view.offset,
        limit: PAGE_SIZE
      });
      page = await this.api.get<IPage>(agentPath(name, 'search') + params);
      const { total, offset, items } = page.data;
      const range = items.length ? `, ${offset + 1}–${offset + items.length}` : '';
      caption = `${plural(total, 'hit')} for “${view.query}”${range}`;
    } else {
      const paging = query({ offset: view.offset, limit: PAGE_SIZE, newest_first: true });
      const path =
        view.kind === 'archive'
          ? agentPath(name, 'archives', view.file) + paging
          : agentPath(name) + paging;
      page = await this.api.get<IPage>(path);
      const { total, offset, items } = page.data;
      const range = total
        ? `${offset + 1}–${offset + items.length} of ${number(total)}, newest first`
        : 'no messages';
      caption = view.kind === 'archive' ? `Archive ${view.file}: ${range}` : `Memory: ${range}`;
    }
    const compactions = await this.api.get<{ compactions: ICompaction[] }>(
      agentPath(name, 'compactions')
    );
    const notes = await this.api.get<INotes>(agentPath(name, 'notes'));
    if (generation !== this.generation) {
      return;
    }
    if (notes.fresh || name !== this.notesAgent) {
      this.notesStatus.textContent = name === this.notesAgent ? this.notesStatus.textContent : '';
      this.notes = notes.data;
      this.notesAgent = name;
      await this.renderNotes();
    }
    const changed = this.dirty || page.fresh || compactions.fresh || name !== this.shownAgent;
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
    this.timeline.update(
      compactions.data.compactions,
      view.kind === 'archive' ? view.file : null
    );
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
    const back = button(
      search ? 'Previous' : 'Newer',
      search ? 'Previous hits' : 'Newer messages',
      () => this.setView({ ...view, offset: Math.max(0, view.offset - PAGE_SIZE) })
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
    await this.renderTokens();
  }

  /** A message card; `fill` renders its body (Markdown, or the exact text). */
  private card(item: IItem): { card: HTMLLIElement; fill: (r: number) => Promise<void> } {
    const card = el('li', 'jp-nbmemory-message', undefined, {
      'data-testid': 'nbmemory-message',
      'data-role': item.role.toLowerCase(),
      'data-index': String(item.index),
      'data-source': item.source
    });
    const meta = el('div', 'jp-nbmemory-message-meta');
    meta.append(
      el('span', 'jp-nbmemory-role', item.role),
      el('span', 'jp-nbmemory-when', `#${item.index} ${item.timestamp}`),
      el('span', 'jp-nbmemory-message-tokens', '', { 'data-testid': 'nbmemory-message-tokens' })
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
        await this.renderer.render(body, text, this.exact.checked);
      }
    };
    return { card, fill };
  }

  /** With "Tokens per message" on, ask the server what each shown message adds to a request. */
  private async renderTokens(): Promise<void> {
    const cards = Array.from(
      this.messageList.querySelectorAll<HTMLElement>('.jp-nbmemory-message')
    );
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
      this.full.set(this.fullKey(item), data.text);
      const card = note.parentElement;
      const body = card?.querySelector<HTMLElement>('.jp-nbmemory-message-body');
      note.remove();
      if (body) {
        await this.renderer.render(body, data.text, this.exact.checked);
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
      const unpin = button(
        'Unpin',
        `Unpin note ${i + 1}`,
        () => void this.unpin(i + 1, text),
        `Unpin note ${i + 1}`
      );
      unpin.dataset.testid = 'nbmemory-unpin';
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
      await this.renderNotes();
      void this.refresh(); // the agent's figures include the notes
    }
  }

  /** Open (or bring forward) the main-area view of one compaction of the selected agent. */
  private openCompaction(compaction: ICompaction, position: number, count: number): void {
    const agent = this.shownAgent;
    const id = CompactionView.idFor(agent, compaction.archive);
    const open = this.views.get(id);
    if (open && !open.isDisposed) {
      this.shell.activateById(open.id);
      return;
    }
    const view = new CompactionView(this.api, this.renderer, agent, compaction, position, count);
    const main = new MainAreaWidget({ content: view });
    main.id = `${id}:main`;
    main.title.label = view.title.label;
    main.title.caption = view.title.caption;
    main.title.icon = listIcon;
    main.title.closable = true;
    this.views.set(id, main);
    main.disposed.connect(() => this.views.delete(id));
    this.shell.add(main, 'main');
    this.shell.activateById(main.id);
    void view.load();
  }

  private readonly api = new Api();
  private readonly renderer: TextRenderer;
  private readonly shell: JupyterFrontEnd.IShell;
  private readonly timeline: CompactionTimeline;
  /** Compaction views open in the main area, by id. */
  private readonly views = new Map<string, MainAreaWidget>();
  private readonly workspace: HTMLElement;
  private readonly status: HTMLElement;
  private readonly agentList: HTMLUListElement;
  private readonly rows = new Map<string, IAgentRow>();
  private readonly detail: HTMLElement;
  private readonly detailTitle: HTMLElement;
  private readonly xray: ContextXray;
  private readonly viewBar: HTMLElement;
  private readonly messageList: HTMLOListElement;
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
