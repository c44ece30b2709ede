/**
 * The notebook cell a message came from (its provenance, see `answers.provenance_json`): the
 * line a message card shows ("cell [12] of analysis.ipynb", and "superseded by cell [15]" when
 * the cell was run again), and what choosing it does: open the notebook, make that cell the
 * active one and scroll to it, or say in the card why it cannot (the notebook or the cell is
 * gone). The path and the labels come from memory: they go in as text only.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { NotebookPanel } from '@jupyterlab/notebook';

import { IProvenance, reason } from './api';
import { el } from './views/dom';
import { phrase } from './views/vocabulary';

/** Go to `provenance`'s cell: null when it is shown, else why not, as a sentence. */
export type CellOpener = (provenance: IProvenance) => Promise<string | null>;

const slashes = (path: string): string => path.replace(/\\/g, '/');
const fileName = (path: string): string => slashes(path).split('/').pop() ?? path;

/**
 * The path the server's contents know `recorded` by: the notebook's path as recorded, relative
 * to the server's root, or made so when it is an absolute path under that root (the kernels
 * JupyterLab starts have their notebook's absolute path in $JPY_SESSION_NAME).
 */
export function contentsPath(recorded: string): string {
  const path = slashes(recorded);
  const root = slashes(PageConfig.getOption('serverRoot')).replace(/\/+$/, '');
  return root && path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}

/** The opener of cells in `app`: it never throws, it says what went wrong. */
export function cellOpener(app: JupyterFrontEnd): CellOpener {
  return async where => {
    const { notebook: recorded, cell_id: id } = where;
    if (!recorded || !id) {
      return phrase('cell unknown', { cell: where.label });
    }
    const path = contentsPath(recorded);
    try {
      await app.serviceManager.contents.get(path, { content: false });
    } catch {
      return phrase('notebook missing', { notebook: path });
    }
    try {
      const widget = await app.commands.execute('docmanager:open', { path });
      if (!(widget instanceof NotebookPanel)) {
        return phrase('notebook missing', { notebook: path });
      }
      await widget.context.ready;
      const notebook = widget.content;
      const index = notebook.widgets.findIndex(cell => cell.model.id === id);
      if (index === -1) {
        const count = where.execution_count ?? ' ';
        return phrase('cell gone', { count, notebook: fileName(path) });
      }
      app.shell.activateById(widget.id);
      notebook.activeCellIndex = index;
      notebook.deselectAll();
      await notebook.scrollToItem(index, 'center');
      return null;
    } catch (error) {
      return `${where.label}: ${reason(error)}`;
    }
  };
}

/**
 * What the last attempt to go to a cell said, by notebook and cell id: the cards are drawn again
 * when the memory changes, and a note that a cell is gone must not vanish with its old card.
 */
const problems = new Map<string, string>();

/**
 * A card's cell line for `where`: the label, as a button that goes to the cell (with `open`,
 * when the notebook and the cell id are known; plain text otherwise), the superseded mark, and
 * a slot where a failure to go there is said.
 */
export function cellLine(where: IProvenance, open: CellOpener | null): HTMLElement {
  const line = el('div', 'jp-nbmemory-cell', undefined, { 'data-testid': 'nbmemory-cell' });
  const key = `${where.notebook}\n${where.cell_id}`;
  const problem = el('span', 'jp-nbmemory-cell-problem', problems.get(key) ?? '', {
    role: 'status',
    'data-testid': 'nbmemory-cell-problem'
  });
  if (open && where.notebook && where.cell_id) {
    const go = el('button', 'jp-nbmemory-cell-link', where.label, {
      type: 'button',
      title: `Open ${where.notebook} at this cell`,
      'data-testid': 'nbmemory-cell-link'
    });
    go.addEventListener('click', async () => {
      problem.textContent = '';
      const said = await open(where);
      problem.textContent = said ?? '';
      if (said) {
        problems.set(key, said);
      } else {
        problems.delete(key);
      }
    });
    line.append(go);
  } else {
    line.append(el('span', 'jp-nbmemory-cell-label', where.label));
  }
  if (where.superseded && where.superseded_label) {
    line.classList.add('jp-nbmemory-superseded');
    line.append(
      el('span', 'jp-nbmemory-superseded-label', where.superseded_label, {
        'data-testid': 'nbmemory-superseded'
      })
    );
  }
  line.append(problem);
  return line;
}
