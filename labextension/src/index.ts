/**
 * nbmemory's JupyterLab extension: the "Agent Memory" sidebar (see `panel.ts`) and its
 * commands (see `commands.ts`).
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { cellOpener, goToCellOfUrl, isNotebook7 } from './cells';
import { CommandIDs, addCommands } from './commands';
import { DEFAULT_SETTINGS, IPanelSettings, MemoryPanel, PANEL_ID } from './panel';
import { TextRenderer } from './render';

export { MemoryPanel };

const PLUGIN_ID = 'nbmemory:plugin';

/** The panel's settings from JupyterLab's (schema/plugin.json), each checked. */
function panelSettings(settings: ISettingRegistry.ISettings): IPanelSettings {
  const get = (key: string) => settings.get(key).composite;
  const poll = get('pollInterval');
  const fold = get('foldLength');
  const order = get('order');
  return {
    pollInterval: typeof poll === 'number' && poll >= 0 ? poll : null,
    foldLength:
      typeof fold === 'number' && fold >= 1
        ? Math.min(100_000, Math.round(fold))
        : DEFAULT_SETTINGS.foldLength,
    order: order === 'oldest' ? 'oldest' : 'newest',
    searchArchives: get('searchArchives') === true
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'A left-sidebar panel with the memory of nbmemory agents, and its commands.',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette, INotebookTracker, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    settingRegistry: ISettingRegistry | null
  ) => {
    const renderer = new TextRenderer();
    const panel = new MemoryPanel({
      renderer,
      shell: app.shell,
      openCell: cellOpener(app, notebooks),
      copyMessage: message => void app.commands.execute(CommandIDs.copyMessage, { ...message })
    });
    if (notebooks && isNotebook7(app)) {
      goToCellOfUrl(app, notebooks);
    }
    addCommands(app, panel, palette, notebooks);
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, PANEL_ID);
    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          panel.settings = panelSettings(settings);
          settings.changed.connect(() => (panel.settings = panelSettings(settings)));
        })
        .catch(error => console.warn('nbmemory: the panel settings could not be read', error));
    }
  }
};

export default plugin;
