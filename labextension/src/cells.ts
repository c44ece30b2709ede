/**
 * The notebook cell a message came from (its provenance, see `answers.provenance_json`): the
 * line a message card shows ("cell [12] of analysis.ipynb", and "superseded by cell [15]" when
 * the cell was run again), and what choosing it does: open the notebook, make that cell the
 * active one and scroll to it, or say in the card why it cannot (the notebook or the cell is
 * gone). The path and the labels come from memory: they go in as text only.
 *
 * JupyterLab opens the notebook among its documents, or reveals it. Notebook 7 shows one
 * document a page, and its document opener opens any other in a new browser tab (and closes
 * the one it was given, which blanks the page when that is the notebook shown): there, a cell
 * of the notebook shown is reached where it is, and another notebook is opened in the same
 * tab at `/notebooks/PATH#cell-id=ID`, the fragment JupyterLab reads for a cell, which
 * `goToCellOfUrl` follows once that page has the notebook.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { IProvenance, reason } from './api';
import { el } from './views/dom';
import { phrase } from './views/vocabulary';

/** Go to `provenance`'s cell: null when it is shown, else why not, as a sentence. */
export type CellOpener = (provenance: IProvenance) => Promise<string | null>;

const CELL_FRAGMENT = '#cell-id=';

const slashes = (path: string): string => path.replace(/\\/g, '/');
const fileName = (path: string): string => slashes(path).split('/').pop() ?? path;

/** Whether `app` is Jupyter Notebook 7 (one document a page), not JupyterLab. */
export const isNotebook7 = (app: JupyterFrontEnd): boolean => app.name === 'Jupyter Notebook';

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

/** Make cell `id` of `panel` the active one and scroll to it; else why not, as a sentence. */
async function goToCell(
  app: JupyterFrontEnd,
  panel: NotebookPanel,
  id: string,
  count: number | string
): Promise<string | null> {
  await panel.context.ready;
  const notebook = panel.content;
  const index = notebook.widgets.findIndex(cell => cell.model.id === id);
  if (index === -1) {
    return phrase('cell gone', { count, notebook: fileName(panel.context.path) });
  }
  app.shell.activateById(panel.id);
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  await notebook.scrollToItem(index, 'center');
  return null;
}

/**
 * Notebook 7: load the page of notebook `path` at cell `id` in this tab, or say why not (the
 * cell is not in the notebook as saved).
 */
async function loadPageAt(
  app: JupyterFrontEnd,
  path: string,
  id: string,
  count: number | string
): Promise<string | null> {
  const saved = await app.serviceManager.contents.get(path, { content: true });
  const cells: { id?: string }[] = saved.content?.cells ?? [];
  if (!cells.some(cell => cell.id === id)) {
    return phrase('cell gone', { count, notebook: fileName(path) });
  }
  const page = URLExt.join(PageConfig.getBaseUrl(), 'notebooks', URLExt.encodeParts(path));
  window.location.assign(`${page}${CELL_FRAGMENT}${encodeURIComponent(id)}`);
  return null;
}

/** The opener of cells in `app`, which knows the notebooks open in it: it never throws, it
 * says what went wrong. */
export function cellOpener(app: JupyterFrontEnd, notebooks: INotebookTracker | null): CellOpener {
  return async where => {
    const { notebook: recorded, cell_id: id } = where;
    if (!recorded || !id) {
      return phrase('cell unknown', { cell: where.label });
    }
    const path = contentsPath(recorded);
    const count = where.execution_count ?? ' ';
    try {
      await app.serviceManager.contents.get(path, { content: false });
    } catch {
      return phrase('notebook missing', { notebook: path });
    }
    try {
      const shown = notebooks?.find(panel => panel.context.path === path);
      if (shown) {
        return await goToCell(app, shown, id, count);
      }
      if (isNotebook7(app)) {
        return await loadPageAt(app, path, id, count);
      }
      const widget = await app.commands.execute('docmanager:open', { path });
      if (!(widget instanceof NotebookPanel)) {
        return phrase('notebook missing', { notebook: path });
      }
      return await goToCell(app, widget, id, count);
    } catch (error) {
      return `${where.label}: ${reason(error)}`;
    }
  };
}

/**
 * Notebook 7: once this page has its notebook, go to the cell its URL names (`#cell-id=ID`,
 * what a cell line of another page loads), if the notebook has it.
 */
export function goToCellOfUrl(app: JupyterFrontEnd, notebooks: INotebookTracker): void {
  const { hash } = window.location;
  if (!hash.startsWith(CELL_FRAGMENT)) {
    return;
  }
  const id = decodeURIComponent(hash.slice(CELL_FRAGMENT.length));
  const go = (panel: NotebookPanel) =>
    void panel.revealed
      .then(() => goToCell(app, panel, id, ' '))
      .then(said => said && console.warn(`nbmemory: ${said}`))
      .catch(error => console.warn(`nbmemory: could not go to cell ${id}`, error));
  if (notebooks.currentWidget) {
    go(notebooks.currentWidget);
    return;
  }
  const added = (_: INotebookTracker, panel: NotebookPanel) => {
    notebooks.widgetAdded.disconnect(added);
    go(panel);
  };
  notebooks.widgetAdded.connect(added);
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
