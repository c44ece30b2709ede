/**
 * The panel's frame of the pinned notes (`views/notes.ts`): it reads an agent's notes from
 * `GET .../notes` and sends what a person asks (pin, unpin, accept, reject, restore, the
 * approval setting) as `POST .../notes`, the "write" action, saying what each did.
 */
import { Api, agentPath, reason } from './api';
import { TextRenderer } from './render';
import { INotes, NoteAction } from './views/noteData';
import { NotesView } from './views/notes';

export class PinnedNotes {
  /** `exact()`: "Exact text" is ticked; `refresh()` reloads the panel (after a change). */
  constructor(
    private readonly api: Api,
    private readonly renderer: TextRenderer,
    private readonly exact: () => boolean,
    private readonly refresh: () => void
  ) {
    this.view = new NotesView({
      act: action => void this.change(action),
      renderText: (node, text) => this.renderer.render(node, text, this.exact())
    });
    this.node = this.view.node;
  }

  readonly node: HTMLElement;

  /**
   * Whether `data`, agent `name`'s notes, differ from those shown. They are compared by
   * content: after a change they show the POST's answer, which the next GET repeats, and
   * redrawing the list for nothing can swallow a click on an Unpin button.
   */
  differ(name: string, data: INotes): boolean {
    return name !== this.agent || JSON.stringify(data) !== JSON.stringify(this.notes);
  }

  /** Show agent `name`'s notes (what was said about another agent's goes). */
  async show(name: string, data: INotes): Promise<void> {
    if (name !== this.agent) {
      this.view.say('');
    }
    this.notes = data;
    this.agent = name;
    await this.render();
  }

  /** Draw the notes again (after "Exact text" changed, or a change). */
  async render(): Promise<void> {
    if (this.notes) {
      await this.view.show(this.notes);
    }
  }

  /** Send `action` for the agent shown; show the new notes, or why it was refused. */
  private async change(action: NoteAction): Promise<void> {
    const name = this.agent;
    const [refused, done] = outcome(action);
    let ok = false;
    try {
      const data = await this.api.post<INotes>(agentPath(name, 'notes'), action);
      if (name === this.agent) {
        this.notes = data;
      }
      ok = true;
      this.view.say(done(data));
    } catch (error) {
      this.view.say(`${refused}: ${reason(error)}`);
    } finally {
      this.view.done(ok, action);
      // The agent's figures include the notes. Refreshing before anything is awaited also makes
      // a refresh under way, which read the notes before this change, give up instead of
      // showing them (`refresh` counts its generation synchronously).
      this.refresh();
      await this.render();
    }
  }

  private readonly view: NotesView;
  /** The notes shown and whose agent they are. */
  private notes: INotes | null = null;
  private agent = '';
}

/** What the panel says when `action` was refused, and what it did once done. */
function outcome(action: NoteAction): [string, (after: INotes) => string] {
  if ('pin' in action) {
    return ['Not pinned', after => `Pinned as note ${after.notes.length}.`];
  }
  if ('unpin' in action) {
    return ['Not unpinned', () => `Unpinned note ${action.unpin}.`];
  }
  if ('accept' in action) {
    return ['Not accepted', () => `Accepted proposal #${action.accept}.`];
  }
  if ('reject' in action) {
    return ['Not rejected', () => `Rejected proposal #${action.reject}.`];
  }
  if ('restore' in action) {
    return ['Not restored', () => `Restored the notes as they were after change #${action.restore}.`];
  }
  return ['Not set', () => `The model's note edits are now “${action.approval}”.`];
}
