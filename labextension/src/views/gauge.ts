/**
 * The gauges' maths and colours, one for the panel's agent list and X-ray and the widget's
 * gauges: one scale (the context window, or the request once it no longer fits in it), the
 * compression threshold's place on it, and each part in its colour (`wording.PALETTE`).
 */
import { partStyle } from './vocabulary';

/** The tokens a gauge spans: the window, or the request when it no longer fits in it. */
export function gaugeScale(tokens: number, window: number): number {
  return Math.max(window, tokens, 1);
}

/** `tokens` as a percent of a gauge's `scale`: a segment's width, a mark's place. */
export function onScale(tokens: number, scale: number): number {
  return (100 * tokens) / scale;
}

/**
 * Where compression starts, in tokens: `threshold` (a share of the window) rounded up, as
 * nbmemory compares them; null when compression is off.
 */
export function thresholdTokens(threshold: number | null, window: number): number | null {
  return threshold === null ? null : Math.ceil(threshold * window);
}

/** Draw `node` in part `name`'s colour, the same in every gauge. */
export function paint<T extends HTMLElement>(node: T, name: string): T {
  const style = partStyle(name);
  if (style) {
    node.style.background = style.color;
  }
  return node;
}
