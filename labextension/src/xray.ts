/**
 * The context X-ray: what the selected agent's next request carries, part by part
 * (`Usage.parts`: system prompt, rules, pinned notes, earlier sessions, this session, tool
 * schemas, reply room), as a stacked gauge drawn against its context window with the
 * compression threshold marked, and a legend with each part's tokens. The parts add up to the
 * agent's `tokens`, the figure compression compares with its threshold.
 */
import type { IAgent, IPart } from './api';
import { el } from './views/dom';
import { number, percent } from './views/format';
import { gaugeScale, onScale, paint, thresholdTokens } from './views/gauge';
import { label, partStyle } from './views/vocabulary';

export class ContextXray {
  constructor() {
    this.node = el('section', 'jp-nbmemory-xray', undefined, {
      'aria-label': 'Context X-ray',
      'data-testid': 'nbmemory-xray'
    });
    this.summary = el('div', 'jp-nbmemory-xray-summary', '', {
      'data-testid': 'nbmemory-xray-summary'
    });
    this.gauge = el('div', 'jp-nbmemory-xray-gauge', undefined, {
      role: 'img',
      'data-testid': 'nbmemory-xray-gauge'
    });
    this.track = el('div', 'jp-nbmemory-xray-track');
    this.threshold = el('div', 'jp-nbmemory-xray-threshold', undefined, {
      'data-testid': 'nbmemory-xray-threshold',
      'aria-hidden': 'true'
    });
    this.windowEnd = el('div', 'jp-nbmemory-xray-window', undefined, { 'aria-hidden': 'true' });
    this.gauge.append(this.track, this.threshold, this.windowEnd);
    this.compacts = el('div', 'jp-nbmemory-xray-compacts', '', {
      role: 'status',
      'data-testid': 'nbmemory-xray-compacts'
    });
    this.compacts.hidden = true;
    this.legend = el('ul', 'jp-nbmemory-xray-legend', undefined, {
      'aria-label': 'What the next request carries',
      'data-testid': 'nbmemory-xray-legend'
    });
    this.node.append(
      el('h4', 'jp-nbmemory-section-title', 'Context X-ray: the next request'),
      this.summary,
      this.gauge,
      this.compacts,
      this.legend
    );
  }

  /** Show `agent`'s next request (nothing is redrawn when its figures did not change). */
  update(agent: IAgent): void {
    const key = JSON.stringify([
      agent.name,
      agent.tokens,
      agent.context_length,
      agent.threshold,
      agent.model,
      agent.compacts_next,
      agent.recorded,
      agent.parts
    ]);
    if (key === this.key) {
      return;
    }
    this.key = key;
    const { tokens, context_length: window, threshold, words } = agent;
    const parts: IPart[] = agent.parts.length ? agent.parts : [{ name: 'total', tokens }];
    const scale = gaugeScale(tokens, window);
    const at = thresholdTokens(threshold, window);
    this.node.dataset.tokens = String(tokens);
    this.node.dataset.contextLength = String(window);
    this.node.classList.toggle('jp-mod-compacts', agent.compacts_next);

    const compresses = words.threshold;
    this.summary.textContent =
      `${words.usage} for ${agent.model} · ${compresses}` +
      (words.settings ? ` · ${words.settings}` : '');

    this.track.replaceChildren(
      ...parts.map((part, index) => {
        const attrs = {
          'data-part': part.name,
          'data-tokens': String(part.tokens),
          'data-testid': 'nbmemory-xray-segment',
          title: `${part.name}: ${number(part.tokens)} tokens`
        };
        const segment = paint(
          el('div', `jp-nbmemory-xray-segment jp-nbmemory-part-${index % 7}`, '', attrs),
          part.name
        );
        segment.style.width = `${onScale(part.tokens, scale).toFixed(3)}%`;
        segment.hidden = part.tokens === 0;
        return segment;
      })
    );
    this.threshold.hidden = at === null;
    this.threshold.style.left = at === null ? '' : `${onScale(at, scale).toFixed(3)}%`;
    this.threshold.title = at === null ? '' : compresses;
    this.windowEnd.hidden = tokens <= window;
    this.windowEnd.style.left = `${onScale(window, scale).toFixed(3)}%`;
    this.gauge.setAttribute(
      'aria-label',
      `Next request: ${number(tokens)} of ${number(window)} tokens; ${compresses}`
    );

    this.compacts.textContent = words.compacts_next || words.stuck || words.over_window;
    this.compacts.hidden = !this.compacts.textContent;

    const rows = parts.map((part, index) => {
      const row = el('li', 'jp-nbmemory-xray-part', undefined, {
        'data-part': part.name,
        'data-tokens': String(part.tokens),
        'data-testid': 'nbmemory-xray-part',
        title: partStyle(part.name)?.description ?? part.name
      });
      row.append(
        paint(
          el('span', `jp-nbmemory-xray-swatch jp-nbmemory-part-${index % 7}`, '', {
            'aria-hidden': 'true'
          }),
          part.name
        ),
        el('span', 'jp-nbmemory-xray-name', part.name),
        el('span', 'jp-nbmemory-xray-tokens', number(part.tokens), {
          'data-testid': 'nbmemory-xray-tokens'
        }),
        el('span', 'jp-nbmemory-xray-share', percent(part.tokens / (window || 1)))
      );
      return row;
    });
    const total = el('li', 'jp-nbmemory-xray-part jp-mod-total', undefined, {
      'data-testid': 'nbmemory-xray-total'
    });
    total.append(
      el('span', 'jp-nbmemory-xray-swatch', '', { 'aria-hidden': 'true' }),
      el('span', 'jp-nbmemory-xray-name', label('next request', 'next request')),
      el('span', 'jp-nbmemory-xray-tokens', number(tokens)),
      el('span', 'jp-nbmemory-xray-share', percent(tokens / (window || 1)))
    );
    this.legend.replaceChildren(...rows, total);
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
