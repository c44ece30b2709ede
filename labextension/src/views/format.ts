/**
 * Numbers, counts and sizes as every view writes them: the same rules as `nbmemory.wording`
 * (`number`, `counted`, `percent`, `byte_size`), so the panel, the widget, `%memory` and the CLI
 * print one figure the same way.
 */

/** "12,345", whatever the browser's locale (`wording.number`). */
export const number = (n: number): string => Number(n).toLocaleString('en');

/** "1 message", "2 messages" (`wording.counted`). */
export const counted = (n: number, word: string): string =>
  `${number(n)} ${word}${n === 1 ? '' : 's'}`;

/** A share as a whole percent (`wording.percent`). */
export const percent = (fraction: number): string => `${Math.round(fraction * 100)}%`;

const UNITS: [string, number][] = [
  ['GB', 1e9],
  ['MB', 1e6],
  ['KB', 1e3]
];

/** A size in bytes (`wording.byte_size`): "-" for none, else B, KB, MB or GB (powers of 1,000). */
export function byteSize(value: number): string {
  if (value <= 0) {
    return '-';
  }
  for (const [unit, scale] of UNITS) {
    if (value >= scale) {
      return `${(value / scale).toFixed(1)} ${unit}`;
    }
  }
  return `${value} B`;
}
