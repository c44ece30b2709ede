// The display bar's own controls (the role filter, "Exact text", "Tokens per message"; the
// search form before them is search.ts's) and the navigation bar: the order, the pages, the
// archives and the Compact button (a preview first: preview.ts).
import { el, keepingFocus } from "../views/dom";
import { number } from "../views/format";
import { pageControls } from "../views/pager";
import { PAGER, goTo, mode, pages } from "./paging";

function displayNodes(model) {
  const exact = el("input", "", undefined, { type: "checkbox", "data-testid": "exact" });
  const exactLabel = el("label", "", " Exact text");
  exactLabel.prepend(exact);
  const perMessage = el("input", "", undefined, { type: "checkbox", "data-testid": "show-tokens" });
  const perMessageLabel = el("label", "", " Tokens per message");
  perMessageLabel.prepend(perMessage);
  const roleFilter = el("select", "", undefined, { "data-testid": "role", "aria-label": "Show the messages of one role" });
  exact.onchange = () => { model.set("exact", exact.checked); model.save_changes(); };
  perMessage.onchange = () => { model.set("show_tokens", perMessage.checked); model.save_changes(); };
  roleFilter.onchange = () => { model.set("role", roleFilter.value); model.save_changes(); };
  return { exact, exactLabel, perMessage, perMessageLabel, roleFilter };
}

function navNodes(model, openArchive) {
  const order = el("button", "", undefined, { type: "button", "data-testid": "order" });
  const pager = el("div", "pages");
  const archives = el("select", "", undefined, { "data-testid": "archives", "aria-label": "Open an archive" });
  const compact = el("button", "", "Compact…", { type: "button", "data-testid": "compact", "aria-label": "Compact this memory: preview the summary first" });
  const nav = el("div", "bar", undefined, { role: "group", "aria-label": "Pages, archives and compaction" });
  nav.append(order, pager, archives, compact);

  order.onclick = () => {
    model.set("newest_first", !model.get("newest_first"));
    for (const [trait] of Object.values(PAGER)) model.set(trait, 0);
    model.save_changes();
  };
  archives.onchange = () => openArchive(archives.value);
  compact.onclick = () => { model.send({ command: "preview" }); };
  return { nav, order, pager, archives, compact };
}

// The views' page controls for the list shown (named for the order, or for results, as the
// panel's are), and the order: named by what it shows, its tooltip says what it does.
function drawPager(model, v) {
  const { page, count } = pages(model);
  const newest = model.get("newest_first");
  const pager = mode(model) === "search" ? "results" : newest ? "newest first" : "oldest first";
  keepingFocus(v.pager, () => v.pager.replaceChildren(
    pageControls({ page: page + 1, pages: count, pager, go: (to) => goTo(model, to - 1) }),
  ));
  v.order.textContent = newest ? "Newest first" : "Oldest first";
  v.order.title = newest ? "Show the oldest first" : "Show the newest first";
}

// The role filter, the display options and the archive list, as the model has them.
function drawOptions(model, v) {
  const { roleFilter, exact, perMessage, archives } = v;
  const roles = model.get("roles");
  const role = model.get("role");
  const options = role && !roles.includes(role) ? [...roles, role] : roles;
  roleFilter.replaceChildren(
    el("option", "", "All roles", { value: "" }),
    ...options.map((r) => el("option", "", r, { value: r })),
  );
  roleFilter.value = role;
  exact.checked = model.get("exact");
  perMessage.checked = model.get("show_tokens");
  const names = model.get("archives");
  archives.replaceChildren(
    el("option", "", names.length ? "MEMORY.md (open an archive…)" : "No archives", { value: "" }),
    ...names.map((a) => el("option", "", `${a.name} · ${number(a.messages)} messages`, { value: a.name })),
  );
  archives.value = model.get("open_archive");
}

// The controls' elements, and `draw` to set them from the model; `openArchive(name)` opens an
// archive chosen in the list ("" for the memory).
function controlsView(model, openArchive) {
  const v = { ...displayNodes(model), ...navNodes(model, openArchive) };
  return {
    ...v,
    draw() {
      drawPager(model, v);
      drawOptions(model, v);
    },
  };
}

export { controlsView };
