// The figures: on the summary line, the name, a small gauge, the usage and the counts; in the
// details, the context X-ray (the views', as the panel shows it), the counts and what is worth
// knowing about them.
import { el } from "../views/dom";
import { byteSize, number } from "../views/format";
import { gaugeScale, onScale, thresholdTokens } from "../views/gauge";
import { label } from "../views/vocabulary";
import { ContextXray, segments } from "../views/xray";

// The figures are the `info` trait, AgentInfo.to_json() (the panel's, under the same names).
// What each part is, its colour and the gauges' maths are the views' (views/gauge.ts), as are
// the sentences about the figures (`words`, from nbmemory.wording).
// The summary line's figures (the toggle before them is the widget's).
function summaryNodes() {
  const name = el("span", "name", undefined, { "data-testid": "name" });
  const miniGauge = el("div", "gauge mini", undefined, { "data-testid": "mini-gauge", "aria-hidden": "true" });
  const miniSegments = el("div", "segments");
  const miniMark = el("div", "threshold");
  miniGauge.append(miniSegments, miniMark);
  const usage = el("span", "usage", undefined, { "data-testid": "usage" });
  const brief = el("span", "brief", undefined, { "data-testid": "brief" });
  return { name, miniGauge, miniSegments, miniMark, usage, brief };
}

// The details' figures beneath the X-ray: the counts and what is worth knowing about them.
function countsNodes() {
  const counts = el("div", "counts", undefined, { "data-testid": "counts" });
  const notes = el("div", "notes", undefined, { "data-testid": "notes" });
  return { counts, notes };
}

// The static summary shown with this widget (for a notebook opened without its kernel):
// hidden while this view is there. In JupyterLab and Notebook 7 a style rule of the
// summary does it too; this is for other front ends.
function hideStatic(model) {
  const ref = model.get("model_ref");
  if (!ref) return;
  for (const node of document.querySelectorAll<HTMLElement>("[data-nbmemory-static]")) {
    if (node.dataset.nbmemoryStatic === ref) node.hidden = true;
  }
}

function drawFigures(model, v) {
  const { name, usage, miniGauge, miniSegments, miniMark, brief, counts, notes, xray } = v;
  hideStatic(model);
  const exists = model.get("exists");
  const info = model.get("info");
  const used = info.tokens || 0;
  const win = info.context_length || 1;
  const percent = Math.round((100 * used) / win);
  const threshold = info.threshold ?? null;
  const words = info.words || {};
  const scale = gaugeScale(used, win); // one for both gauges, and the panel's
  name.textContent = info.model ? `${model.get("name")} · ${info.model}` : model.get("name");
  if (!exists) {
    usage.textContent = "no agent yet";
  } else if (model.get("counting")) {
    usage.textContent = `${label("counting")} / ${number(win)} tokens`;
  } else {
    usage.textContent = words.usage;
  }
  const counted = exists && !model.get("counting");
  const parts = info.parts?.length ? info.parts : exists ? [{ name: "total", tokens: used }] : [];
  miniSegments.replaceChildren(...segments(parts, scale, "segment", false));
  miniGauge.setAttribute("data-percent", String(exists ? percent : 0));
  miniGauge.classList.toggle("compacts", counted && info.compacts_next);
  xray.node.hidden = !exists;
  if (exists) xray.update(info, counted);
  const at = thresholdTokens(threshold, win);
  miniMark.hidden = at === null;
  if (at !== null) {
    miniMark.style.left = `calc(${onScale(at, scale)}% - 1px)`;
    miniMark.title = words.threshold || "";
  }
  brief.textContent = !exists || !info.counts ? "" : info.counts
    + (counted && info.compacts_next ? ` · ${label("compacts next")}` : "");
  if (!exists || !info.counts) {
    counts.textContent = "";
  } else {
    const file = model.get("in_ram") ? "kept in RAM (no MEMORY.md)" : `MEMORY.md ${byteSize(info.size)}`;
    const lastCompaction = model.get("archives").at(-1)?.time;
    counts.textContent = `${info.counts} · ${file}`
      + (lastCompaction ? ` · last compaction ${lastCompaction}` : "");
  }
  const lines: string[] = [];
  if (exists && threshold === null) lines.push("Context compression is off for this agent.");
  for (const problem of info.problems || []) lines.push(problem);
  notes.textContent = lines.join(" ");
}

// The figures' elements, and `draw` to fill them from the model's figure traits.
function gaugeView(model) {
  const v = { ...summaryNodes(), ...countsNodes(), xray: new ContextXray("xray") };
  return { ...v, draw: () => drawFigures(model, v) };
}

export { gaugeView };
