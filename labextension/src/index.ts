/**
 * nbmemory's JupyterLab extension: the "Agent Memory" sidebar (see `panel.ts`).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ISanitizer, Sanitizer } from '@jupyterlab/apputils';
import { IMarkdownParser } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { MemoryPanel, PANEL_ID } from './panel';
import { MessageSanitizer, TextRenderer } from './render';

export { MemoryPanel };

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
    const renderer = new TextRenderer(
      new MessageSanitizer(sanitizer ?? new Sanitizer()),
      markdownParser
    );
    const panel = new MemoryPanel({ renderer, shell: app.shell });
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, PANEL_ID);
  }
};

export default plugin;
