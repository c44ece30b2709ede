/**
 * Where the panel opens the view of a compaction (`CompactionView`): the main area, or, in
 * Notebook 7, whose main area holds its one document, the area under it.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import { listIcon } from '@jupyterlab/ui-components';
import { SplitPanel, Widget } from '@lumino/widgets';

import type { Api, ICompaction } from './api';
import type { CellOpener } from './cells';
import type { TextRenderer } from './render';
import type { Targets } from './targets';
import { CompactionView } from './compactionView';

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

export class CompactionViews {
  constructor(
    private readonly shell: JupyterFrontEnd.IShell,
    private readonly api: Api,
    private readonly renderer: TextRenderer,
    private readonly targets: Targets,
    private readonly back: (agent: string, archive: string) => void,
    private readonly openCell: CellOpener | null = null
  ) {}

  /** Open (or bring forward) the view of one compaction of `agent`. */
  open(agent: string, compaction: ICompaction, position: number, count: number): void {
    this.targets.archive = { agent, archive: compaction.archive };
    const id = CompactionView.idFor(agent, compaction.archive);
    const open = this.views.get(id);
    if (open && !open.isDisposed) {
      this.shell.activateById(open.id);
      return;
    }
    const view = new CompactionView(
      this.api,
      this.renderer,
      agent,
      compaction,
      position,
      count,
      () => {
        main.dispose();
        this.back(agent, compaction.archive);
      },
      this.openCell
    );
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

  /** Compaction views open in the main area (or the down area), by id. */
  private readonly views = new Map<string, MainAreaWidget>();
}
