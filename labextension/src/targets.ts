/**
 * What the commands act on: the message and the archive last focused, clicked or right-clicked
 * in the panel or in a compaction view. Cards and compaction rows carry what identifies them
 * (`data-agent`, `data-source`, `data-index`, `data-archive`), never their text.
 */

/** A message, by agent, file (MEMORY.md or an archive) and index there. */
export interface IMessageRef {
  agent: string;
  source: string;
  index: number;
  role: string;
}

/** An archive of an agent. */
export interface IArchiveRef {
  agent: string;
  archive: string;
}

export const MEMORY_FILE = 'MEMORY.md';

export class Targets {
  message: IMessageRef | null = null;
  archive: IArchiveRef | null = null;

  /** Follow focus, clicks and context menus under `node`. */
  watch(node: HTMLElement): void {
    const update = (event: Event) => this.update(event.target);
    node.addEventListener('focusin', update);
    node.addEventListener('click', update);
    node.addEventListener('contextmenu', update);
  }

  /** Forget what belonged to agent `name` (when another agent is selected). */
  forget(name: string | null): void {
    if (this.message && this.message.agent !== name) {
      this.message = null;
    }
    if (this.archive && this.archive.agent !== name) {
      this.archive = null;
    }
  }

  private update(target: EventTarget | null): void {
    if (!(target instanceof Element)) {
      return;
    }
    const card = target.closest<HTMLElement>('.jp-nbmemory-message[data-agent]');
    if (card) {
      const { agent, source, index, role } = card.dataset;
      if (agent && source && index !== undefined) {
        this.message = { agent, source, index: Number(index), role: role ?? '' };
        // A message of an archive makes that archive the one to act on; one of MEMORY.md, none
        // (the archive shown in the list, if any, is then the one).
        this.archive = source === MEMORY_FILE ? null : { agent, archive: source };
      }
      return;
    }
    const row = target.closest<HTMLElement>('[data-archive][data-agent]');
    if (row?.dataset.agent && row.dataset.archive) {
      this.archive = { agent: row.dataset.agent, archive: row.dataset.archive };
    }
  }
}
