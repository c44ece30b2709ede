/**
 * nbmemory's JupyterLab extension: the "Agent Memory" sidebar (see `panel.ts`) and its
 * commands (see `commands.ts`).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, ISanitizer, Sanitizer } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IMarkdownParser } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { addCommands } from './commands';
import { MemoryPanel, PANEL_ID } from './panel';
import { MessageSanitizer, TextRenderer } from './render';

export { MemoryPanel };

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nbmemory:sidebar',
  description: 'A left-sidebar panel with the memory of nbmemory agents, and its commands.',
  autoStart: true,
  optional: [ISanitizer, IMarkdownParser, ILayoutRestorer, ICommandPalette, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    sanitizer: IRenderMime.ISanitizer | null,
    markdownParser: IRenderMime.IMarkdownParser | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null
  ) => {
    const renderer = new TextRenderer(
      new MessageSanitizer(sanitizer ?? new Sanitizer()),
      markdownParser
    );
    const panel = new MemoryPanel({ renderer, shell: app.shell });
    addCommands(app, panel, palette, notebooks);
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, PANEL_ID);
  }
};

export default plugin;
