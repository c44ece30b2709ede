/**
 * The panel's polling: a timer that refreshes it every few seconds while it is visible (the
 * setting, else the server's `poll_interval`), and the line that says how often.
 */
import type { Widget } from '@lumino/widgets';

import { el } from './views/dom';
import { number } from './views/format';

/** The server's `MIN_POLL_INTERVAL`: a shorter interval is raised to it. */
const MIN_POLL_SECONDS = 0.5;
/** Until the server says otherwise (`NbMemoryServer.poll_interval`). */
const DEFAULT_POLL_SECONDS = 3;

export class Poller {
  /**
   * Poll `panel` (its visibility, and its node's `data-poll-seconds`) with `refresh`; `chosen`
   * is the setting: seconds, `null` for the server's, 0 for none.
   */
  constructor(
    private readonly panel: Widget,
    private readonly refresh: () => void,
    private readonly chosen: () => number | null
  ) {}

  /** "Checks for changes every ..." */
  readonly node = el('div', 'jp-nbmemory-polling', '', { 'data-testid': 'nbmemory-polling' });

  /** The server's interval (`poll_interval` of its agent list). */
  serverSeconds = DEFAULT_POLL_SECONDS;

  /** Seconds between polls: the setting, else the server's; 0 for none. */
  get seconds(): number {
    const chosen = this.chosen();
    if (chosen === null) {
      return this.serverSeconds;
    }
    return chosen <= 0 ? 0 : Math.max(MIN_POLL_SECONDS, chosen);
  }

  /** (Re)start the polling timer when the interval changed (or `force`). */
  start(force = true): void {
    const seconds = this.panel.isVisible ? this.seconds : 0;
    if (!force && seconds === this.timerSeconds) {
      return;
    }
    this.stop();
    this.timerSeconds = seconds;
    this.panel.node.dataset.pollSeconds = String(seconds);
    const interval = this.seconds;
    this.node.textContent =
      interval > 0
        ? `Checks for changes every ${number(interval)} s` +
          (this.chosen() === null ? ' (the server\'s setting)' : '')
        : 'Does not check for changes (off in the settings): use Refresh';
    if (seconds > 0) {
      this.timer = window.setInterval(() => {
        if (this.panel.isVisible && !document.hidden) {
          this.refresh();
        }
      }, seconds * 1000);
    }
  }

  /** Stop the timer (the panel is hidden or disposed). */
  stop(): void {
    window.clearInterval(this.timer);
    this.timer = 0;
  }

  private timer = 0;
  private timerSeconds = -1;
}
