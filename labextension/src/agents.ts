/**
 * The panel's agent list: a listbox with one tab stop, arrow keys, Home and End, a row per
 * agent with its gauge (drawn against its own context window, its compression threshold
 * marked) and figures. Rows are kept across polls, so focus and selection stay put.
 */
import type { IAgent } from './api';
import { listMove } from './dom';
import { el } from './views/dom';
import { gaugeScale, onScale, thresholdTokens } from './views/gauge';
import { label } from './views/vocabulary';

/** One row of the agent list, kept across polls so focus and selection stay put. */
interface IAgentRow {
  row: HTMLLIElement;
  gauge: HTMLElement;
  bar: HTMLElement;
  mark: HTMLElement;
  figures: HTMLElement;
  key: string;
}

export class AgentList {
  /** `select(name)` selects an agent; `selected()` is the one selected, if any. */
  constructor(
    private readonly select: (name: string) => void,
    private readonly selected: () => string | null
  ) {
    this.node.addEventListener('keydown', event => this.onKey(event));
  }

  readonly node = el('ul', 'jp-nbmemory-agents', undefined, {
    role: 'listbox',
    'aria-label': 'Agents'
  });

  /** Whether no agent is listed (yet). */
  get isEmpty(): boolean {
    return !this.node.children.length;
  }

  /** Mark agent `name`'s row as the selected one, and make it the tab stop. */
  markSelected(name: string): void {
    for (const [other, { row }] of this.rows) {
      row.setAttribute('aria-selected', String(other === name));
      row.tabIndex = other === name ? 0 : -1;
    }
  }

  /** Focus the tab stop's row (the selected agent, else the first); false if there is none. */
  focus(): boolean {
    const rows = Array.from(this.node.children) as HTMLElement[];
    const row = rows.find(r => r.tabIndex === 0) ?? rows[0];
    row?.focus();
    return row !== undefined;
  }

  /** Update the rows in place: a row is made once per agent and changed only when its figures do. */
  update(agents: IAgent[]): void {
    const active = document.activeElement as HTMLElement | null;
    const focusedRow = active && this.node.contains(active) ? active : null;
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
      const here = this.node.children[position];
      if (here !== entry.row) {
        // Agents come sorted, so a new row goes in between and existing rows stay put.
        this.node.insertBefore(entry.row, here ?? null);
      }
    });
    // One tab stop: the selected row, else the first.
    const selected = this.selected();
    const stop = selected && names.has(selected) ? selected : agents[0]?.name;
    for (const [name, { row }] of this.rows) {
      row.tabIndex = name === stop ? 0 : -1;
    }
    // Moving a focused element takes its focus away: should a focused row ever move (a name
    // that sorts differently), it gets the focus back; if its agent is gone, the focus stays
    // in the list.
    if (focusedRow && focusedRow.isConnected && document.activeElement !== focusedRow) {
      focusedRow.focus();
    } else if (focusedRow && !focusedRow.isConnected) {
      (Array.from(this.node.children) as HTMLElement[]).find(r => r.tabIndex === 0)?.focus();
    }
  }

  private onKey(event: KeyboardEvent): void {
    const rows = Array.from(this.node.children) as HTMLElement[];
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

  private makeRow(name: string): IAgentRow {
    const row = el('li', 'jp-nbmemory-agent', undefined, {
      role: 'option',
      tabindex: '-1',
      'aria-selected': String(name === this.selected()),
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
      if (this.selected() !== name) {
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
    const scale = gaugeScale(tokens, window); // the X-rays' and the widget's
    const at = thresholdTokens(threshold, window);
    entry.row.dataset.tokens = String(tokens);
    entry.row.dataset.contextLength = String(window);
    entry.row.dataset.threshold = threshold === null ? '' : String(threshold);
    entry.row.dataset.messages = String(agent.messages);
    entry.bar.style.width = `${onScale(tokens, scale).toFixed(1)}%`;
    entry.bar.classList.toggle('jp-mod-full', agent.compacts_next);
    entry.mark.hidden = at === null;
    entry.mark.style.left = at === null ? '' : `${onScale(at, scale).toFixed(1)}%`;
    entry.gauge.setAttribute('aria-label', `${agent.name}: tokens of the next request`);
    entry.gauge.setAttribute('aria-valuemax', String(window));
    entry.gauge.setAttribute('aria-valuenow', String(Math.min(tokens, window)));
    const { words } = agent;
    entry.gauge.title =
      `${words.usage} for ${agent.model}; ${words.threshold}` +
      (words.settings ? `; ${words.settings}` : '');
    entry.figures.textContent =
      `${words.usage} · ${words.threshold} · ${agent.counts}` +
      (words.settings ? ' · default settings' : '') +
      (agent.compacts_next ? ` · ${label('compacts next', 'compacts on the next call')}` : '');
    entry.row.setAttribute('aria-label', `${agent.name}: ${entry.figures.textContent}`);
  }

  private readonly rows = new Map<string, IAgentRow>();
}
