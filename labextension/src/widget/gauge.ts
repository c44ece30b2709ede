// The figures: on the summary line, the name, a small gauge, the usage and the counts; in the
// details, the context X-ray (what the next request carries, part by part, against the
// window), the counts and what is worth knowing about them.
import { el } from "../views/dom";
import { byteSize, number } from "../views/format";
import { gaugeScale, onScale, paint, thresholdTokens } from "../views/gauge";
import { label, partStyle } from "../views/vocabulary";

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

// Context X-ray: what the next request carries, part by part, against the window.
function xrayNodes() {
  const xray = el("section", "xray", undefined, { "data-testid": "xray", "aria-label": "Context X-ray" });
  const gauge = el("div", "gauge", undefined, { "data-testid": "gauge", role: "meter", "aria-label": "Context window used", "aria-valuemin": "0", "aria-valuemax": "100" });
  const segments = el("div", "segments");
  const mark = el("div", "threshold", undefined, { "data-testid": "threshold" });
  gauge.append(segments, mark);
  const compactsNext = el("div", "compacts-next", undefined, { "data-testid": "compacts-next", role: "status" });
  const legend = el("ul", "legend", undefined, { "data-testid": "legend", "aria-label": "What the next request carries" });
  xray.append(gauge, compactsNext, legend);
  const counts = el("div", "counts", undefined, { "data-testid": "counts" });
  const notes = el("div", "notes", undefined, { "data-testid": "notes" });
  return { xray, gauge, segments, mark, compactsNext, legend, counts, notes };
}

function drawXray(model, v, exists, used, win, scale) {
  const { miniSegments, segments, legend, gauge, miniGauge, compactsNext } = v;
  const parts = model.get("info").parts || [];
  const words = model.get("info").words || {};
  const shown = parts.length ? parts : exists ? [{ name: "total", tokens: used }] : [];
  const segment = (part, i, attrs = {}) => {
    const node = paint(el("div", `segment part-${i}`, undefined, { ...attrs }), part.name);
    node.style.width = `${onScale(part.tokens, scale)}%`;
    node.hidden = !part.tokens;
    return node;
  };
  miniSegments.replaceChildren(...shown.map((part, i) => segment(part, i)));
  segments.replaceChildren(...shown.map((part, i) => segment(part, i, {
    "data-testid": "segment", "data-part": part.name, "data-tokens": String(part.tokens),
    title: `${part.name}: ${number(part.tokens)} tokens`,
  })));
  const items = shown.map((part, i) => {
    const item = el("li", "", undefined, { "data-testid": "legend-item", "data-part": part.name, "data-tokens": String(part.tokens) });
    const help = partStyle(part.name)?.description;
    item.append(
      paint(el("span", `swatch part-${i}`, undefined, { "aria-hidden": "true" }), part.name),
      el("span", "part-name", part.name),
      el("span", "part-tokens", `${number(part.tokens)}`),
    );
    if (help) item.title = help;
    return item;
  });
  if (exists && !model.get("counting")) {
    const total = el("li", "legend-total", undefined, { "data-testid": "legend-total", "data-tokens": String(used) });
    total.append(
      el("span", "part-name", label("next request")),
      el("span", "part-tokens", `${words.usage} · ${words.threshold}`),
    );
    items.push(total);
  }
  legend.replaceChildren(...items);
  const compacting = exists && !model.get("counting") && model.get("info").compacts_next;
  gauge.classList.toggle("compacts", compacting);
  miniGauge.classList.toggle("compacts", compacting);
  const counted = exists && !model.get("counting");
  compactsNext.textContent = counted ? words.compacts_next || words.stuck || words.over_window || "" : "";
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
  const { name, usage, gauge, mark, miniMark, brief, counts, notes } = v;
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
    usage.textContent = `counting tokens… / ${number(win)} tokens`;
  } else {
    usage.textContent = words.usage;
  }
  gauge.setAttribute("data-percent", String(exists ? percent : 0));
  gauge.setAttribute("aria-valuenow", String(exists ? Math.min(100, percent) : 0));
  gauge.setAttribute("aria-valuetext", exists ? usage.textContent : "no agent yet");
  drawXray(model, v, exists, used, win, scale);
  const at = thresholdTokens(threshold, win);
  mark.hidden = miniMark.hidden = at === null;
  if (at !== null) {
    mark.style.left = miniMark.style.left = `calc(${onScale(at, scale)}% - 1px)`;
    mark.title = words.threshold || "";
  }
  const counted = exists && !model.get("counting");
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
  if (exists && !model.get("in_ram") && words.settings) lines.push(`Figures use ${words.settings}.`);
  for (const problem of info.problems || []) lines.push(problem);
  notes.textContent = lines.join(" ");
}

// The figures' elements, and `draw` to fill them from the model's figure traits.
function gaugeView(model) {
  const v = { ...summaryNodes(), ...xrayNodes() };
  return { ...v, draw: () => drawFigures(model, v) };
}

export { gaugeView };
