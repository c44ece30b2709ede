/**
 * The context X-ray, one for the panel and the widget: what an agent's next request carries,
 * part by part (`Usage.parts`: system prompt, rules, pinned notes, earlier sessions, this
 * session, tool schemas, reply room), as a stacked gauge drawn against its context window with
 * the compression threshold marked, and a legend with each part's tokens and share of the
 * window. The parts add up to `tokens`, the figure compression compares with its threshold.
 */
import { el } from './dom';
import { number, percent } from './format';
import { gaugeScale, onScale, paint, thresholdTokens } from './gauge';
import { label, partStyle } from './vocabulary';

/** One part of the next request (`Usage.parts`): they add up to `IUsage.tokens`. */
export interface IPart {
  name: string;
  tokens: number;
}

/** The sentences about a next request (`wording.usage_words`): every view says these. */
export interface IUsageWords {
  usage: string;
  threshold: string;
  compacts_next: string;
  stuck: string;
  over_window: string;
  settings: string;
}

/** The next request's figures (`Usage.to_json`). */
export interface IUsage {
  tokens: number;
  context_length: number;
  threshold: number | null;
  fraction: number;
  model: string;
  encoding: string;
  recorded: boolean;
  compacts_next: boolean;
  stuck: boolean;
  parts: IPart[];
  words: IUsageWords;
}

/**
 * One segment per part, `className` and its part's colour, as wide as its share of `scale`;
 * `named` adds what tests and tooltips read (the big gauges; a small one needs none).
 */
export function segments(
  parts: IPart[],
  scale: number,
  className: string,
  named = true
): HTMLElement[] {
  return parts.map((part, index) => {
    const attrs: Record<string, string> = named
      ? {
          'data-part': part.name,
          'data-tokens': String(part.tokens),
          'data-testid': 'nbmemory-xray-segment',
          title: `${part.name}: ${number(part.tokens)} tokens`
        }
      : {};
    const segment = paint(el('div', `${className} part-${index % 7}`, '', attrs), part.name);
    segment.style.width = `${onScale(part.tokens, scale).toFixed(3)}%`;
    segment.hidden = part.tokens === 0;
    return segment;
  });
}

/**
 * The X-ray's elements and `update` to draw a usage in them. Every class is `prefix` and a
 * suffix (`jp-nbmemory-xray-legend` in the panel, `xray-legend` in the widget): each frame styles
 * its own; the test ids are the same in both.
 */
export class ContextXray {
  constructor(private readonly prefix: string) {
    const part = (suffix: string) => `${prefix}-${suffix}`;
    this.node = el('section', prefix, undefined, {
      'aria-label': 'Context X-ray',
      'data-testid': 'nbmemory-xray'
    });
    this.summary = el('div', part('summary'), '', { 'data-testid': 'nbmemory-xray-summary' });
    this.gauge = el('div', part('gauge'), undefined, {
      role: 'meter',
      'aria-label': 'Context window used',
      'aria-valuemin': '0',
      'aria-valuemax': '100',
      'data-testid': 'nbmemory-xray-gauge'
    });
    this.track = el('div', part('track'));
    this.threshold = el('div', part('threshold'), undefined, {
      'data-testid': 'nbmemory-xray-threshold',
      'aria-hidden': 'true'
    });
    this.windowEnd = el('div', part('window'), undefined, { 'aria-hidden': 'true' });
    this.gauge.append(this.track, this.threshold, this.windowEnd);
    this.compacts = el('div', part('compacts'), '', {
      role: 'status',
      'data-testid': 'nbmemory-xray-compacts'
    });
    this.compacts.hidden = true;
    this.legend = el('ul', part('legend'), undefined, {
      'aria-label': 'What the next request carries',
      'data-testid': 'nbmemory-xray-legend'
    });
    this.node.append(
      el('h4', part('title'), 'Context X-ray: the next request'),
      this.summary,
      this.gauge,
      this.compacts,
      this.legend
    );
  }

  /**
   * Show `usage` (nothing is redrawn when its figures did not change); while its tokens are
   * still being `counted`, only the parts known so far, without a total or a warning.
   */
  update(usage: IUsage, counted = true): void {
    const key = JSON.stringify([usage, counted]);
    if (key === this.key) {
      return;
    }
    this.key = key;
    const { tokens, context_length: window, threshold, words } = usage;
    const parts = usage.parts.length ? usage.parts : [{ name: 'total', tokens }];
    const scale = gaugeScale(tokens, window);
    const at = thresholdTokens(threshold, window);
    this.node.dataset.tokens = String(tokens);
    this.node.dataset.contextLength = String(window);
    this.gauge.classList.toggle('compacts', counted && usage.compacts_next);

    const compresses = words.threshold;
    this.summary.textContent = counted
      ? `${words.usage} for ${usage.model} · ${compresses}` +
        (words.settings ? ` · ${words.settings}` : '')
      : label('counting');

    this.track.replaceChildren(...segments(parts, scale, this.part('segment')));
    this.threshold.hidden = at === null;
    this.threshold.style.left = at === null ? '' : `${onScale(at, scale).toFixed(3)}%`;
    this.threshold.title = at === null ? '' : compresses;
    this.windowEnd.hidden = tokens <= window;
    this.windowEnd.style.left = `${onScale(window, scale).toFixed(3)}%`;
    const used = Math.round((100 * tokens) / (window || 1));
    this.gauge.setAttribute('aria-valuenow', String(Math.min(100, used)));
    this.gauge.setAttribute(
      'aria-valuetext',
      `${number(tokens)} of ${number(window)} tokens; ${compresses}`
    );

    this.compacts.textContent = counted
      ? words.compacts_next || words.stuck || words.over_window
      : '';
    this.compacts.hidden = !this.compacts.textContent;

    const rows = parts.map((one, index) =>
      this.row(one.name, one.tokens, window, `part-${index % 7}`, {
        'data-part': one.name,
        'data-testid': 'nbmemory-xray-part',
        title: partStyle(one.name)?.description ?? one.name
      })
    );
    if (counted) {
      rows.push(
        this.row(label('next request', 'next request'), tokens, window, '', {
          'data-testid': 'nbmemory-xray-total'
        })
      );
      rows[rows.length - 1].classList.add('total');
    }
    this.legend.replaceChildren(...rows);
  }

  /** A legend row: a swatch (in `swatch`'s part colour, none for the total), name, tokens, share. */
  private row(
    name: string,
    tokens: number,
    window: number,
    swatch: string,
    attrs: Record<string, string>
  ): HTMLLIElement {
    const row = el('li', this.part('part'), undefined, {
      ...attrs,
      'data-tokens': String(tokens)
    });
    const mark = el('span', `${this.part('swatch')} ${swatch}`.trim(), '', {
      'aria-hidden': 'true'
    });
    row.append(
      swatch ? paint(mark, name) : mark,
      el('span', this.part('name'), name),
      el('span', this.part('tokens'), number(tokens), { 'data-testid': 'nbmemory-xray-tokens' }),
      el('span', this.part('share'), percent(tokens / (window || 1)))
    );
    return row;
  }

  private part(suffix: string): string {
    return `${this.prefix}-${suffix}`;
  }

  readonly node: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly gauge: HTMLElement;
  private readonly track: HTMLElement;
  private readonly threshold: HTMLElement;
  private readonly windowEnd: HTMLElement;
  private readonly compacts: HTMLElement;
  private readonly legend: HTMLUListElement;
  private key = '';
}
