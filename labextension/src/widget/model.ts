// The anywidget model as the widget's views use it: its traits are the kernel's
// (nbmemory.jupyter.widget.traits), so their values are `any` here, at the boundary.

interface Model {
  get(trait: string): any;
  set(trait: string, value: any): void;
  save_changes(): void;
  send(content: Record<string, any>): void;
  on(event: string, handler: (...args: any[]) => void): void;
  off(event: string, handler?: (...args: any[]) => void): void;
  widget_manager: { get_model(id: string): Promise<any> };
}

// What the views share: the model, the widget's root, whether a kernel backs it, and ways to
// say and redraw things (set by `render` once every view exists).
interface Context {
  model: Model;
  widget: HTMLElement;
  live: boolean;
  say(text: string): void;
  drawList(): void;
  drawAll(): void;
}

export type { Context, Model };
