// Expanded or a one-line summary (the toggle); live, or a saved view with no kernel behind it
// (the notebook was reopened, or its kernel stopped): then its controls are off, Copy aside.
import { el } from "../views/dom";
import type { Context, Model } from "./model";

function drawMode(s) {
  const { ctx, model, toggle, offline, details, miniGauge } = s;
  const { widget, live } = ctx;
  const expanded = model.get("expanded");
  widget.classList.toggle("collapsed", !expanded);
  details.hidden = !expanded;
  miniGauge.hidden = expanded;
  toggle.setAttribute("aria-expanded", String(expanded));
  toggle.textContent = expanded ? "▾" : "▸";
  toggle.setAttribute("aria-label", expanded ? "Hide the memory inspector" : "Show the memory inspector");
  widget.classList.toggle("saved-view", !live);
  const when = model.get("info").last_activity;
  offline.textContent = live ? "" : "Saved view: no kernel follows this widget now (the notebook was "
    + "reopened, or its kernel stopped), so it shows the memory as it was"
    + (when ? ` (last activity ${when})` : "") + ". Run the cell again to inspect it live.";
  for (const control of details.querySelectorAll("button, input, select")) {
    if (!live && !control.classList.contains("copy")) control.disabled = true;
  }
}

// Whether a kernel still backs this widget's model (the widget manager knows), then draw it all.
async function checkLive(s) {
  const { ctx, model } = s;
  let real: any = null;
  try {
    const ref = model.get("model_ref");
    real = ref && model.widget_manager ? await model.widget_manager.get_model(ref) : null;
  } catch (error) {
    real = null;
  }
  ctx.live = Boolean(real && real.comm_live);
  if (real && !s.watched) {
    s.watched = real;
    real.on("comm_live_update", s.onLiveChange);
  }
  ctx.drawAll();
}

// The toggle and the saved view's notice; `draw` shows the mode, `check` asks whether the view
// is live (and keeps asking when that changes), `stop` stops that. `ctx` is the widget's:
// {model, widget, live, drawAll()}; `details` is what the toggle shows and hides.
function liveView(ctx: Context, details: HTMLElement, miniGauge: HTMLElement) {
  const toggle = el("button", "toggle", undefined, { type: "button", "data-testid": "toggle", "aria-controls": details.id });
  const offline = el("div", "offline", undefined, { "data-testid": "offline", role: "status" });
  const s = { ctx, model: ctx.model, toggle, offline, details, miniGauge, watched: null as Model | null, onLiveChange: () => {} };
  s.onLiveChange = () => checkLive(s);
  toggle.onclick = () => {
    ctx.model.set("expanded", !ctx.model.get("expanded"));
    ctx.model.save_changes();
    drawMode(s);
  };
  return {
    toggle,
    offline,
    draw: () => drawMode(s),
    check: () => checkLive(s),
    stop() {
      if (s.watched) s.watched.off("comm_live_update", s.onLiveChange);
    },
  };
}

export { liveView };
