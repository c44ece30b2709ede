// The figures: on the summary line, the name, a small gauge, the usage and the counts; in the
// details, the context X-ray (what the next request carries, part by part, against the
// window), the counts and what is worth knowing about them.
import { bytes, el, number } from "./dom.js";

// The parts of a request, in the order it carries them (read_model.PARTS), and what each is.
const PART_HELP = {
  "system prompt": "the agent's instructions",
  "rules": "its rules and custom rules",
  "pinned notes": "NOTES.md, carried by every request, never compacted",
  "earlier sessions": "MEMORY.md as the running agent preloaded it",
  "this session": "what the running agent added since",
  "tool schemas": "the tools it may call",
  "reply room": "tokens kept free for the answer",
};

// The summary line's figures (the toggle before them is the widget's).
function summaryNodes() {
  const name = el("span", { class: "name", "data-testid": "name" });
  const miniGauge = el("div", { class: "gauge mini", "data-testid": "mini-gauge", "aria-hidden": "true" });
  const miniSegments = el("div", { class: "segments" });
  const miniMark = el("div", { class: "threshold" });
  miniGauge.append(miniSegments, miniMark);
  const usage = el("span", { class: "usage", "data-testid": "usage" });
  const brief = el("span", { class: "brief", "data-testid": "brief" });
  return { name, miniGauge, miniSegments, miniMark, usage, brief };
}

// Context X-ray: what the next request carries, part by part, against the window.
function xrayNodes() {
  const xray = el("section", { class: "xray", "data-testid": "xray", "aria-label": "Context X-ray" });
  const gauge = el("div", {
    class: "gauge", "data-testid": "gauge", role: "meter", "aria-label": "Context window used",
    "aria-valuemin": "0", "aria-valuemax": "100",
  });
  const segments = el("div", { class: "segments" });
  const mark = el("div", { class: "threshold", "data-testid": "threshold" });
  gauge.append(segments, mark);
  const compactsNext = el("div", { class: "compacts-next", "data-testid": "compacts-next", role: "status" });
  const legend = el("ul", { class: "legend", "data-testid": "legend", "aria-label": "What the next request carries" });
  xray.append(gauge, compactsNext, legend);
  const counts = el("div", { class: "counts", "data-testid": "counts" });
  const notes = el("div", { class: "notes", "data-testid": "notes" });
  return { xray, gauge, segments, mark, compactsNext, legend, counts, notes };
}

function drawXray(model, v, exists, used, win, threshold) {
  const { miniSegments, segments, legend, gauge, miniGauge, compactsNext } = v;
  const parts = model.get("usage_parts");
  const shown = parts.length ? parts : exists ? [{ name: "memory", tokens: used }] : [];
  const scale = Math.max(win, used, 1); // past the window, the bar is full and in scale
  const segment = (part, i, attrs = {}) => {
    const node = el("div", { class: `segment part-${i}`, ...attrs });
    node.style.width = `${(100 * part.tokens) / scale}%`;
    node.hidden = !part.tokens;
    return node;
  };
  miniSegments.replaceChildren(...shown.map((part, i) => segment(part, i)));
  segments.replaceChildren(...shown.map((part, i) => segment(part, i, {
    "data-testid": "segment", "data-part": part.name, "data-tokens": String(part.tokens),
    title: `${part.name}: ${number(part.tokens)} tokens`,
  })));
  const items = shown.map((part, i) => {
    const item = el("li", { "data-testid": "legend-item", "data-part": part.name, "data-tokens": String(part.tokens) });
    const help = PART_HELP[part.name];
    item.append(
      el("span", { class: `swatch part-${i}`, "aria-hidden": "true" }),
      el("span", { class: "part-name" }, part.name),
      el("span", { class: "part-tokens" }, `${number(part.tokens)}`),
    );
    if (help) item.title = help;
    return item;
  });
  if (exists && !model.get("counting")) {
    const total = el("li", { class: "legend-total", "data-testid": "legend-total", "data-tokens": String(used) });
    const at = threshold === null ? "no compression" : `compacts at ${number(Math.ceil(threshold * win))} (${Math.round(threshold * 100)}%)`;
    total.append(
      el("span", { class: "part-name" }, "next request"),
      el("span", { class: "part-tokens" }, `${number(used)} of ${number(win)} · ${at}`),
    );
    items.push(total);
  }
  legend.replaceChildren(...items);
  const compacting = exists && !model.get("counting") && model.get("compacts_next");
  gauge.classList.toggle("compacts", compacting);
  miniGauge.classList.toggle("compacts", compacting);
  compactsNext.textContent = compacting
    ? `The next model call will compact this memory first: ${number(used)} tokens reach the `
      + `${Math.round(threshold * 100)}% threshold (${number(Math.ceil(threshold * win))} of ${number(win)}).`
    : "";
}

// The static summary shown with this widget (for a notebook opened without its kernel):
// hidden while this view is there. In JupyterLab and Notebook 7 a style rule of the
// summary does it too; this is for other front ends.
function hideStatic(model) {
  const ref = model.get("model_ref");
  if (!ref) return;
  for (const node of document.querySelectorAll("[data-nbmemory-static]")) {
    if (node.dataset.nbmemoryStatic === ref) node.hidden = true;
  }
}

function drawFigures(model, v) {
  const { name, usage, gauge, mark, miniMark, brief, counts, notes } = v;
  hideStatic(model);
  const exists = model.get("exists");
  const used = model.get("tokens_used");
  const win = model.get("context_length") || 1;
  const percent = Math.round((100 * used) / win);
  const threshold = model.get("threshold");
  const modelName = model.get("model_name");
  name.textContent = modelName ? `${model.get("name")} · ${modelName}` : model.get("name");
  if (!exists) {
    usage.textContent = "no agent yet";
  } else if (model.get("counting")) {
    usage.textContent = `counting tokens… / ${number(win)} tokens`;
  } else {
    usage.textContent = `${number(used)} / ${number(win)} tokens (${percent}%)`;
  }
  gauge.setAttribute("data-percent", String(exists ? percent : 0));
  gauge.setAttribute("aria-valuenow", String(exists ? Math.min(100, percent) : 0));
  gauge.setAttribute("aria-valuetext", exists ? usage.textContent : "no agent yet");
  drawXray(model, v, exists, used, win, threshold);
  mark.hidden = miniMark.hidden = threshold === null;
  if (threshold !== null) {
    mark.style.left = miniMark.style.left = `calc(${Math.min(100, threshold * 100)}% - 1px)`;
    mark.title = `compression at ${Math.round(threshold * 100)}%`;
  }
  const messageCount = model.get("message_count");
  const archiveCount = model.get("archive_count");
  brief.textContent = !exists ? "" : `${number(messageCount)} ${messageCount === 1 ? "message" : "messages"}`
    + ` · ${number(archiveCount)} ${archiveCount === 1 ? "archive" : "archives"}`
    + (exists && !model.get("counting") && model.get("compacts_next") ? " · the next call compacts" : "");
  if (!exists) {
    counts.textContent = "";
  } else {
    const file = model.get("in_ram") ? "kept in RAM (no MEMORY.md)" : `MEMORY.md ${bytes(model.get("memory_bytes"))}`;
    const lastCompaction = model.get("last_compaction");
    counts.textContent = `${number(model.get("message_count"))} messages · ${number(model.get("archive_count"))} archives · ${file}`
      + (lastCompaction ? ` · last compaction ${lastCompaction}` : "");
  }
  const lines = [];
  if (exists && threshold === null) lines.push("Context compression is off for this agent.");
  if (exists && !model.get("in_ram") && !model.get("settings_recorded")) lines.push("Figures use default settings: this agent has not recorded its model and window yet.");
  for (const problem of model.get("problems")) lines.push(problem);
  notes.textContent = lines.join(" ");
}

// The figures' elements, and `draw` to fill them from the model's figure traits.
function gaugeView(model) {
  const v = { ...summaryNodes(), ...xrayNodes() };
  return { ...v, draw: () => drawFigures(model, v) };
}

export { gaugeView };
