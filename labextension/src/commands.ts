/**
 * The panel's commands, in JupyterLab's command registry: in the command palette (category
 * "Agent Memory"), in context menus on agents, messages and compactions, and in the panel's
 * toolbar. They act on the agent selected in the panel and on the message or archive last
 * focused, clicked or right-clicked (`Targets`), unless their arguments name one.
 *
 * Message text goes only where text goes: the clipboard, or a new raw notebook cell (never run,
 * never rendered). Nothing here builds HTML from it.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import {
  Clipboard,
  Dialog,
  ICommandPalette,
  InputDialog,
  MainAreaWidget,
  Notification,
  showDialog,
  showErrorMessage
} from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import {
  CommandToolbarButton,
  addBelowIcon,
  collapseAllIcon,
  copyIcon,
  downloadIcon,
  historyIcon,
  moveDownIcon,
  moveUpIcon,
  numberingIcon,
  refreshIcon,
  searchIcon,
  textEditorIcon
} from '@jupyterlab/ui-components';
import type { ReadonlyJSONObject, ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

import { Api, IAgent, IAgents, IItem, agentPath, query, reason } from './api';
import { isNotebook7 } from './cells';
import { el } from './views/dom';
import { counted, number } from './views/format';
import { messageNumber } from './views/vocabulary';
import { CompactPreview, ICompactPreview } from './views/preview';
import { MemoryPanel } from './panel';
import { IArchiveRef, IMessageRef, MEMORY_FILE } from './targets';
import { CompactionView } from './compactionView';

export const CATEGORY = 'Agent Memory';

export namespace CommandIDs {
  export const show = 'nbmemory:show';
  export const refresh = 'nbmemory:refresh';
  export const openMemory = 'nbmemory:open-memory';
  export const openArchive = 'nbmemory:open-archive';
  export const copyMessage = 'nbmemory:copy-message';
  export const insertMessage = 'nbmemory:insert-message';
  export const compact = 'nbmemory:compact';
  export const exportMemory = 'nbmemory:export';
  export const search = 'nbmemory:search';
  export const newest = 'nbmemory:newest';
  export const oldest = 'nbmemory:oldest';
  export const goToPage = 'nbmemory:go-to-page';
}

const FORMATS: Record<string, string> = { json: 'JSON', yaml: 'YAML', md: 'Markdown' };

/** Copy `text` to the system clipboard. */
async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    Clipboard.copyToSystem(text); // older browsers, or no permission: the copy event
  }
}

/** A compaction previewed by the server (`POST .../compact {"preview": true}`), not made: its
 * plan is the id that measures an edit of it or carries it out. */
interface IPlanned extends ICompactPreview {
  plan: string;
}

/**
 * The compaction preview (`views/preview.ts`) in a dialog: its buttons ask the server (a new
 * preview, an edit measured against the last one); Compact or Cancel closes the dialog, which
 * resolves with the summary to write and the plan it goes with, or null.
 */
async function choose(
  api: Api,
  agent: IAgent,
  first: IPlanned
): Promise<{ summary: string; plan: string } | null> {
  const name = agent.name;
  let plan = first.plan;
  let chosen: { summary: string; plan: string } | null = null;
  const ask = async (body: Record<string, unknown>, doing: string): Promise<void> => {
    view.say(doing);
    try {
      const answer = await api.post<IPlanned>(agentPath(name, 'compact'), {
        preview: true,
        ...body
      });
      plan = answer.plan;
      view.say('');
      view.show(answer);
    } catch (error) {
      view.say(`No new preview: ${reason(error)}`);
    }
  };
  const view: CompactPreview = new CompactPreview(name, agent.messages, {
    again: (keep, edit) =>
      void ask(edit === null ? { keep } : { keep, summary: edit }, 'Asking the model for a summary…'),
    measure: summary => void ask({ plan, summary }, ''),
    compact: summary => {
      chosen = { summary, plan };
      dialog.reject(); // closed: the compaction follows
    },
    cancel: () => dialog.reject()
  });
  view.show(first);
  const body = new Widget({ node: view.node });
  body.addClass('jp-nbmemory-compact-dialog');
  const dialog = new Dialog({
    title: `Compact ${name}?`,
    body,
    buttons: [],
    focusNodeSelector: 'textarea'
  });
  await dialog.launch();
  return chosen;
}

/** A dialog saying why a file cannot be opened in JupyterLab, with its absolute path. */
async function cannotOpen(what: string, why: string, absolute: string): Promise<void> {
  const body = el('div', 'jp-nbmemory-path-dialog');
  body.append(
    el('p', '', why),
    el('p', '', 'Its path:'),
    el('code', 'jp-nbmemory-path', absolute, { 'data-testid': 'nbmemory-absolute-path' })
  );
  const result = await showDialog({
    title: `JupyterLab cannot open ${what}`,
    body: new Widget({ node: body }),
    buttons: [Dialog.okButton({ label: 'Close' }), Dialog.createButton({ label: 'Copy path' })]
  });
  if (result.button.label === 'Copy path') {
    await copyText(absolute);
    Notification.info(`Copied the path of ${what}.`, { autoClose: 3000 });
  }
}

interface IPathAnswer {
  absolute: string;
  relative: string | null;
  exists: boolean;
  reason: string | null;
}

/**
 * What the commands share: the app, the panel, and how a command finds what it acts on (what
 * its arguments name, else the panel's selected agent and its last message or archive).
 */
class CommandContext {
  constructor(
    readonly app: JupyterFrontEnd,
    readonly panel: MemoryPanel,
    readonly notebooks: INotebookTracker | null
  ) {}

  readonly commands = this.app.commands;
  readonly shell = this.app.shell;
  readonly api = this.panel.api;

  readonly agentOf = (args: ReadonlyPartialJSONObject): string | null =>
    typeof args.agent === 'string' ? args.agent : (this.panel.selectedAgent?.name ?? null);

  readonly messageOf = (args: ReadonlyPartialJSONObject): IMessageRef | null => {
    if (typeof args.agent === 'string' && typeof args.index === 'number') {
      const source = typeof args.source === 'string' ? args.source : MEMORY_FILE;
      return { agent: args.agent, source, index: args.index, role: '' };
    }
    return this.panel.targets.message;
  };

  /** The compaction view in front of the main area, if that is what is shown. */
  readonly frontView = (): CompactionView | null => {
    const current = this.shell.currentWidget;
    return current instanceof MainAreaWidget && current.content instanceof CompactionView
      ? current.content
      : null;
  };

  /** The archive named, else the one last used (a compaction, its view, an archive's
   * message), else the one in the message list, else the compaction view in front. */
  readonly archiveOf = (args: ReadonlyPartialJSONObject): IArchiveRef | null => {
    const agent = this.agentOf(args);
    if (agent && typeof args.archive === 'string') {
      return { agent, archive: args.archive };
    }
    const target = this.panel.targets.archive;
    if (target) {
      return target;
    }
    const shown = this.panel.shownArchive;
    if (agent && shown) {
      return { agent, archive: shown };
    }
    const view = this.frontView();
    return view ? { agent: view.agent, archive: view.compaction.archive } : null;
  };

  readonly showPanel = () => this.shell.activateById(this.panel.id);

  /** Open MEMORY.md (archive null) or an archive of `agent` in JupyterLab's text editor. */
  readonly openFile = async (agent: string, archive: string | null) => {
    const what = archive ? `${agent}'s archive ${archive}` : `${agent}'s MEMORY.md`;
    try {
      const { data } = await this.api.get<IPathAnswer>(
        agentPath(agent, 'path') + query({ archive })
      );
      if (!data.exists) {
        Notification.warning(
          `${what} does not exist yet: the memory has no messages (${data.absolute}).`,
          { autoClose: 8000 }
        );
        return;
      }
      if (data.relative === null) {
        await cannotOpen(what, data.reason ?? 'It is not under the server root.', data.absolute);
        return;
      }
      await this.commands.execute('docmanager:open', { path: data.relative, factory: 'Editor' });
    } catch (error) {
      await showErrorMessage(`Could not open ${what}`, reason(error));
    }
  };

  /** The whole text of a message (never folded). */
  readonly wholeText = async (ref: IMessageRef): Promise<IItem> => {
    const archive = ref.source === MEMORY_FILE ? null : ref.source;
    const { data } = await this.api.get<IItem>(
      agentPath(ref.agent, 'messages', String(ref.index)) + query({ archive })
    );
    return data;
  };
}

const describe = (ref: IMessageRef) =>
  `message ${messageNumber(ref.index)} of ${ref.agent}` +
  (ref.source === MEMORY_FILE ? '' : ` (archive ${ref.source})`);

/** Show and refresh the panel; open MEMORY.md or an archive in the editor. */
function addOpenCommands(c: CommandContext): void {
  const { commands, panel, agentOf, archiveOf, showPanel, openFile } = c;

  commands.addCommand(CommandIDs.show, {
    label: 'Show Agent Memory',
    caption: 'Open the Agent Memory panel',
    execute: async () => {
      showPanel();
      // The focus goes to the agent list once the sidebar has shown the panel (activating a
      // collapsed sidebar shows it after this call, when focusing it earlier would do nothing).
      await new Promise(resolve => requestAnimationFrame(resolve));
      await panel.focusAgents();
    }
  });

  commands.addCommand(CommandIDs.refresh, {
    label: 'Refresh Agent Memory',
    caption: 'Reload the agents and the messages shown',
    icon: refreshIcon,
    execute: () => panel.refresh()
  });

  commands.addCommand(CommandIDs.openMemory, {
    label: args => {
      const agent = agentOf(args);
      return agent ? `Open ${agent}'s MEMORY.md in Editor` : 'Open MEMORY.md in Editor';
    },
    caption: "Open the selected agent's MEMORY.md in JupyterLab's text editor",
    icon: textEditorIcon,
    isEnabled: args => agentOf(args) !== null,
    execute: async args => {
      const agent = agentOf(args);
      if (agent) {
        await openFile(agent, null);
      }
    }
  });

  commands.addCommand(CommandIDs.openArchive, {
    label: args => {
      const ref = archiveOf(args);
      return ref ? `Open Archive ${ref.archive} in Editor` : 'Open Archive in Editor';
    },
    caption: "Open the archive shown or chosen in JupyterLab's text editor",
    icon: historyIcon,
    isEnabled: args => archiveOf(args) !== null,
    execute: async args => {
      const ref = archiveOf(args);
      if (ref) {
        await openFile(ref.agent, ref.archive);
      }
    }
  });
}

/** Copy a message, or insert it into the notebook as a raw cell. */
function addMessageCommands(c: CommandContext): void {
  const { commands, shell, notebooks, messageOf, wholeText } = c;

  commands.addCommand(CommandIDs.copyMessage, {
    label: 'Copy Message Text',
    caption: 'Copy the whole text of the message to the clipboard',
    icon: copyIcon,
    isEnabled: args => messageOf(args) !== null,
    execute: async args => {
      const ref = messageOf(args);
      if (!ref) {
        return;
      }
      try {
        const item = await wholeText(ref);
        await copyText(item.text);
        Notification.success(`Copied ${describe(ref)} (${counted(item.length, 'character')}).`, {
          autoClose: 3000
        });
      } catch (error) {
        await showErrorMessage(`Could not copy ${describe(ref)}`, reason(error));
      }
    }
  });

  commands.addCommand(CommandIDs.insertMessage, {
    label: 'Insert Message into Notebook as Raw Cell',
    caption:
      'Insert the text of the message into the current notebook, below the active cell, as a ' +
      'raw cell: never run, never rendered',
    icon: addBelowIcon,
    isEnabled: args => messageOf(args) !== null,
    execute: async args => {
      const ref = messageOf(args);
      if (!ref) {
        return;
      }
      const notebook = notebooks?.currentWidget ?? null;
      if (!notebook?.content.model) {
        Notification.warning(
          `Open a notebook first: ${describe(ref)} goes into a new raw cell of the current notebook.`,
          { autoClose: 8000 }
        );
        return;
      }
      try {
        const item = await wholeText(ref);
        const content = notebook.content;
        const model = content.model!;
        const at = content.widgets.length ? content.activeCellIndex + 1 : 0;
        model.sharedModel.insertCell(at, {
          cell_type: 'raw',
          source: item.text,
          metadata: {
            nbmemory: {
              agent: ref.agent,
              file: ref.source,
              index: item.index,
              role: item.role,
              timestamp: item.timestamp
            }
          }
        });
        content.activeCellIndex = at;
        shell.activateById(notebook.id);
        Notification.success(
          `Inserted ${describe(ref)} into ${notebook.context.path} as raw cell ${at + 1}.`,
          { autoClose: 4000 }
        );
      } catch (error) {
        await showErrorMessage(`Could not insert ${describe(ref)}`, reason(error));
      }
    }
  });
}

/**
 * Compact an agent's memory after a preview: the model's summary, offered in an editable box,
 * the tokens before and after, the terms it would drop (tick to keep); Compact writes the
 * summary shown, Cancel changes nothing.
 */
function addCompactCommand(c: CommandContext): void {
  const { commands, panel, api, agentOf } = c;

  commands.addCommand(CommandIDs.compact, {
    label: args => {
      const agent = agentOf(args);
      return agent ? `Compact ${agent}'s Memory…` : 'Compact Agent Memory…';
    },
    caption: "Preview a summary of the selected agent's messages, then archive them and keep it",
    icon: collapseAllIcon,
    isEnabled: args => agentOf(args) !== null,
    execute: async args => {
      const name = agentOf(args);
      if (!name) {
        return;
      }
      try {
        const { data } = await api.get<IAgents>('agents');
        const agent = data.agents.find(a => a.name === name);
        if (!agent) {
          await showErrorMessage('Not compacted', `There is no agent named ${name} any more.`);
          return;
        }
        if (!agent.messages) {
          Notification.info(`Nothing to compact: ${name}'s memory has no messages.`, {
            autoClose: 5000
          });
          return;
        }
        const asking = Notification.info(`Asking the model for a summary of ${name}…`);
        let first: IPlanned;
        try {
          first = await api.post<IPlanned>(agentPath(name, 'compact'), { preview: true });
        } finally {
          Notification.dismiss(asking);
        }
        const chosen = await choose(api, agent, first);
        if (!chosen) {
          return;
        }
        const done = await api.post<{
          archive: string | null;
          tokens_before: number;
          tokens_after: number;
          figures: string;
        }>(agentPath(name, 'compact'), chosen);
        Notification.success(
          `Compacted ${name}: ${done.figures || 'nothing archived'}; the transcript is in ` +
            `${done.archive ?? 'no archive (nothing to archive)'}.`,
          { autoClose: 6000 }
        );
        await panel.refresh();
      } catch (error) {
        await showErrorMessage(`Not compacted: ${name}`, reason(error));
      }
    }
  });
}

/** Download an agent's memory as JSON, YAML or Markdown. */
function addExportCommand(c: CommandContext): void {
  const { commands, api, agentOf } = c;

  commands.addCommand(CommandIDs.exportMemory, {
    label: args => {
      const format = typeof args.format === 'string' ? FORMATS[args.format] : undefined;
      return format ? `Export Agent Memory as ${format}` : 'Export Agent Memory…';
    },
    caption:
      "Download the selected agent's memory as JSON, YAML or Markdown " +
      '(the file nbmemory export writes)',
    icon: downloadIcon,
    isEnabled: args => agentOf(args) !== null,
    execute: async args => {
      const agent = agentOf(args);
      if (!agent) {
        return;
      }
      let format = typeof args.format === 'string' ? args.format : '';
      if (!(format in FORMATS)) {
        const choice = await InputDialog.getItem({
          title: `Export ${agent}'s memory as`,
          items: Object.values(FORMATS),
          current: 0
        });
        if (!choice.button.accept || !choice.value) {
          return;
        }
        format = Object.keys(FORMATS).find(key => FORMATS[key] === choice.value) ?? 'md';
      }
      const archive = typeof args.archive === 'string' ? args.archive : null;
      try {
        const file = await api.download(agentPath(agent, 'export') + query({ format, archive }));
        const url = URL.createObjectURL(new Blob([file.text], { type: file.type }));
        const link = el('a', '', undefined, { href: url, download: file.filename });
        document.body.append(link);
        link.click();
        link.remove();
        window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
        Notification.success(`Exported ${agent}'s memory as ${file.filename}.`, {
          autoClose: 4000
        });
      } catch (error) {
        await showErrorMessage(`Could not export ${agent}'s memory`, reason(error));
      }
    }
  });
}

/** Search the selected agent's messages; go to a page of them. */
function addNavigationCommands(c: CommandContext): void {
  const { commands, panel, showPanel } = c;

  commands.addCommand(CommandIDs.search, {
    label: 'Search Agent Memory…',
    caption: "Search the selected agent's messages",
    icon: searchIcon,
    isEnabled: () => panel.selectedAgent !== null,
    execute: () => {
      showPanel();
      panel.focusSearch();
    }
  });

  commands.addCommand(CommandIDs.newest, {
    label: 'Go to Newest Messages',
    caption: 'Show the page with the newest messages',
    icon: moveUpIcon,
    isEnabled: () => panel.selectedAgent !== null,
    execute: () => {
      showPanel();
      panel.goTo('newest');
    }
  });

  commands.addCommand(CommandIDs.oldest, {
    label: 'Go to Oldest Messages',
    caption: 'Show the page with the oldest messages',
    icon: moveDownIcon,
    isEnabled: () => panel.selectedAgent !== null,
    execute: () => {
      showPanel();
      panel.goTo('oldest');
    }
  });

  commands.addCommand(CommandIDs.goToPage, {
    label: 'Go to Page of Messages…',
    caption: 'Show one page of the message list, by its number',
    icon: numberingIcon,
    isEnabled: () => panel.selectedAgent !== null,
    execute: async args => {
      const pages = panel.listPages;
      let page = typeof args.page === 'number' ? args.page : NaN;
      if (!Number.isFinite(page)) {
        const result = await InputDialog.getNumber({
          title: 'Go to page',
          label: `Page, from 1 to ${number(pages)}`,
          value: 1
        });
        if (!result.button.accept || result.value === null) {
          return;
        }
        page = result.value;
      }
      if (!(page >= 1 && page <= pages)) {
        await showErrorMessage('No such page', `Pages go from 1 to ${number(pages)}, not ${page}.`);
        return;
      }
      showPanel();
      panel.goTo(page);
    }
  });
}

export function addCommands(
  app: JupyterFrontEnd,
  panel: MemoryPanel,
  palette: ICommandPalette | null,
  notebooks: INotebookTracker | null
): void {
  const { commands } = app;
  const c = new CommandContext(app, panel, notebooks);
  addOpenCommands(c);
  addMessageCommands(c);
  addCompactCommand(c);
  addExportCommand(c);
  addNavigationCommands(c);

  if (palette) {
    const items: [string, ReadonlyJSONObject?][] = [
      [CommandIDs.refresh],
      [CommandIDs.openMemory],
      [CommandIDs.openArchive],
      [CommandIDs.copyMessage],
      [CommandIDs.insertMessage],
      [CommandIDs.compact],
      [CommandIDs.exportMemory, { format: 'json' }],
      [CommandIDs.exportMemory, { format: 'yaml' }],
      [CommandIDs.exportMemory, { format: 'md' }],
      [CommandIDs.search],
      [CommandIDs.newest],
      [CommandIDs.oldest],
      [CommandIDs.goToPage]
    ];
    // Notebook 7 lists "Show Agent Memory" itself, as it does for every panel of its left area.
    if (!isNotebook7(app)) {
      items.unshift([CommandIDs.show]);
    }
    for (const [command, args] of items) {
      palette.addItem({ command, category: CATEGORY, args });
    }
  }

  // Context menus: on a message (in the panel or a compaction view), an agent, a compaction.
  const menus: [string, string, ReadonlyJSONObject?][] = [
    ['.jp-nbmemory-message[data-agent]', CommandIDs.copyMessage],
    ['.jp-nbmemory-message[data-agent]', CommandIDs.insertMessage],
    [`.jp-nbmemory-message[data-agent]:not([data-source="${MEMORY_FILE}"])`, CommandIDs.openArchive],
    [`.jp-nbmemory-message[data-agent][data-source="${MEMORY_FILE}"]`, CommandIDs.openMemory],
    ['.jp-nbmemory-agent', CommandIDs.openMemory],
    ['.jp-nbmemory-agent', CommandIDs.compact],
    ['.jp-nbmemory-agent', CommandIDs.exportMemory, { format: 'json' }],
    ['.jp-nbmemory-agent', CommandIDs.exportMemory, { format: 'yaml' }],
    ['.jp-nbmemory-agent', CommandIDs.exportMemory, { format: 'md' }],
    ['.jp-nbmemory-panel .nbmemory-compaction', CommandIDs.openArchive]
  ];
  menus.forEach(([selector, command, args], rank) =>
    app.contextMenu.addItem({ selector, command, args, rank: 10 + rank })
  );

  // The panel's toolbar: icons, named by their captions.
  for (const [name, command] of [
    ['refresh', CommandIDs.refresh],
    ['search', CommandIDs.search],
    ['open-memory', CommandIDs.openMemory],
    ['compact', CommandIDs.compact],
    ['export', CommandIDs.exportMemory]
  ]) {
    panel.toolbar.addItem(name, new CommandToolbarButton({ commands, id: command, label: '' }));
  }
  // Toolbar buttons ask the registry whether they are enabled: tell it when the selection moves.
  panel.selectionChanged.connect(() => commands.notifyCommandChanged());
}
