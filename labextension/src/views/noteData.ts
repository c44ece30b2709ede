/**
 * What the notes' views share: the notes and their changes as the server gives them (the
 * panel's REST answer, the widget's `notes` trait), what a person may ask of them, and the
 * small button both parts draw.
 */
import { el } from './dom';

/** One change to the notes, as `nbmemory.memory.note_history.Change` records it. */
export interface INoteChange {
  n: number;
  change: string;
  at: string;
  added?: string;
  removed?: string;
  ref?: number;
  /** The notes after it: what a restore of it brings back. */
  notes: string[];
  author: { who: string; via: string; user?: string; run?: string; after: string[] };
  /** The change in one line, worded by the server as every view words it. */
  said: string;
  /** Whether it made a version of the notes (a person may restore it). */
  version: boolean;
}

/** An agent's notes and their review (`ReadModel.pinned`): the panel's REST answer and the
 * widget's `notes` trait alike. */
export interface INotes {
  name: string;
  notes: string[];
  tokens: number;
  budget: number;
  /** How the model's edits are taken: "default", "auto", "ask" or "off". */
  approval: string;
  /** The model's edits waiting for review, oldest first. */
  pending: INoteChange[];
  /** The latest recorded changes to the notes, oldest first. */
  history: INoteChange[];
}

/** What a person asks of the notes; the frame sends it (`POST .../notes`, or the comm). */
export type NoteAction =
  | { pin: string }
  | { unpin: number; note: string }
  | { accept: number }
  | { reject: number }
  | { restore: number }
  | { approval: string };

/** A small button of the views: its text, its tooltip, and the name a screen reader says. */
export function noteButton(
  text: string,
  title: string,
  name: string,
  onClick: () => void
): HTMLButtonElement {
  const node = el('button', 'jp-Button jp-mod-small jp-mod-minimal jp-nbmemory-button', text, {
    type: 'button',
    title,
    'aria-label': name
  });
  node.addEventListener('click', onClick);
  return node;
}
