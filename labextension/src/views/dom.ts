/**
 * The one element helper of every view. Text always goes in as text (`textContent`): nothing
 * here parses HTML, so untrusted text cannot become elements; and its bidirectional controls
 * are shown as ⟨U+202E⟩, so a short label (a term, a query, a note's line) cannot reorder itself.
 */
import { showBidi } from './vocabulary';


/** A DOM element with a class (none when empty), optional text and attributes. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text?: string,
  attrs: Record<string, string> = {}
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = showBidi(text);
  }
  for (const [key, value] of Object.entries(attrs)) {
    node.setAttribute(key, value);
  }
  return node;
}

/** Put `text` in `node` as `el` does: as text, its bidirectional controls shown. */
export function setText(node: HTMLElement, text: string): void {
  node.textContent = showBidi(text);
}

/**
 * Run `draw`, which replaces what is inside `container`, and put the focus back on the element
 * with the same `data-key` if it was inside before, so a redraw never takes the focus away. When
 * that element is disabled now (a page button at the end it turned to), the focus goes to the
 * one its `data-focus-instead` names. A field someone was typing in keeps what they typed, unless
 * the redraw shows another value in it (the page they asked for has come).
 */
export function keepingFocus(container: HTMLElement, draw: () => void): void {
  const active = document.activeElement as HTMLElement | null;
  const inside = active && container.contains(active);
  const key = inside ? active.dataset.key : undefined;
  const instead = inside ? active.dataset.focusInstead : undefined;
  const typed =
    active instanceof HTMLInputElement && active.value !== active.defaultValue
      ? { value: active.value, shown: active.defaultValue }
      : null;
  draw();
  if (key === undefined) {
    return;
  }
  const find = (k: string) => container.querySelector<HTMLElement>(`[data-key="${CSS.escape(k)}"]`);
  const again = find(key);
  if (again && (again as HTMLButtonElement).disabled && instead !== undefined) {
    find(instead)?.focus();
    return;
  }
  if (typed && again instanceof HTMLInputElement && again.defaultValue === typed.shown) {
    again.value = typed.value;
  }
  again?.focus();
}
