/**
 * A compaction as both views show it: the timeline row's line, and an opened compaction's
 * dropped terms (how many, where they come from, each a button that finds it in the archived
 * transcript). Terms are the memory's text: put in as text.
 */
import { el } from './dom';
import { counted, number } from './format';
import { label, phrase } from './vocabulary';

/** A compaction as the server answers it and the widget's traits hold it. */
export interface ICompactionFacts {
  archive: string;
  time: string;
  kept_messages: number;
  /** "memory 669 → 166 tokens · next request 2,931 → 2,428 tokens", worded by the server. */
  figures: string;
  messages: number;
  /** The first of the terms dropped (at most the server's bound). */
  dropped: string[];
  dropped_total: number;
  /** Whether the compressor recorded what it dropped (else it was worked out from the files). */
  recorded: boolean;
}

/** "nothing dropped", "1 term dropped", "71 terms dropped" (`wording.dropped_words`). */
export function droppedWords(total: number): string {
  return total
    ? phrase('terms dropped', { terms: counted(total, 'term') })
    : label('none dropped', 'nothing dropped');
}

/** A timeline row: "memory … tokens · next request … tokens · 12 messages archived · nothing
 * dropped". */
export function compactionLine(compaction: ICompactionFacts): string {
  return (
    `${compaction.figures} · ${counted(compaction.messages, 'message')} archived · ` +
    droppedWords(compaction.dropped_total)
  );
}

/** An opened compaction's line: "2026-01-05T10:00:00 · memory … · 12 messages archived to
 * history_….md, then 2 messages kept word for word". */
export function archivedLine(compaction: ICompactionFacts): string {
  const kept = compaction.kept_messages
    ? `, then ${counted(compaction.kept_messages, 'message')} kept word for word`
    : '';
  return (
    `${compaction.time || '?'} · ${compaction.figures} · ` +
    `${counted(compaction.messages, 'message')} archived to ${compaction.archive}${kept}`
  );
}

/**
 * The dropped terms of an opened compaction: a heading with how many, where they come from
 * (its record, or worked out from the files), and each term as a button calling `onFind`,
 * with the term in a `mark` of class `markClass` (the class the transcript's marks have).
 */
export function droppedSection(
  compaction: ICompactionFacts,
  onFind: (term: string) => void,
  markClass: string
): HTMLElement {
  const { dropped, dropped_total: total } = compaction;
  const section = el('section', 'nbmemory-dropped', undefined, {
    'aria-label': 'Dropped terms',
    'data-testid': 'nbmemory-dropped'
  });
  const title = total
    ? phrase('dropped', { terms: counted(total, 'term') }) +
      (total > dropped.length ? phrase('dropped listed', { listed: number(dropped.length) }) : '')
    : label('nothing dropped');
  const list = el('ul', 'nbmemory-dropped-list', undefined, {
    'aria-label': 'Dropped terms',
    'data-testid': 'nbmemory-dropped-list'
  });
  list.append(
    ...dropped.map(term => {
      const item = el('li', 'nbmemory-dropped-term', undefined, {
        'data-testid': 'nbmemory-dropped-term',
        'data-term': term
      });
      const find = el('button', 'nbmemory-dropped-find', undefined, {
        type: 'button',
        title: `Show the first message of the transcript with “${term}”`,
        'aria-label': `Find “${term}” in the transcript`
      });
      find.append(el('mark', markClass, term, { 'data-term': term }));
      find.addEventListener('click', () => onFind(term));
      item.append(find);
      return item;
    })
  );
  section.append(
    el('h3', 'nbmemory-dropped-title', title, { 'data-testid': 'nbmemory-dropped-title' }),
    el('p', 'nbmemory-dropped-source', compaction.recorded ? label('recorded') : label('no record'), {
      'data-testid': 'nbmemory-dropped-source'
    }),
    list
  );
  return section;
}
