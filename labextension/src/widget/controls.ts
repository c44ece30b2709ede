// The display bar's own controls (the role filter, "Exact text", "Tokens per message"; the
// search field before them is search.js's) and the navigation bar: the order, the pages, the
// archives and the Compact button (a preview first: preview.js).
import { el } from "../views/dom";
import { number } from "../views/format";
import { pageButtons } from "../views/paging";
import { phrase } from "../views/vocabulary";
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
  const first = el("button", "", undefined, { type: "button", "data-testid": "first" });
  const prev = el("button", "", undefined, { type: "button", "data-testid": "previous" });
  const pageText = el("span", "", undefined, { "data-testid": "page", "aria-live": "polite", tabindex: "-1" });
  const next = el("button", "", undefined, { type: "button", "data-testid": "next" });
  const last = el("button", "", undefined, { type: "button", "data-testid": "last" });
  const pageInput = el("input", "page-input", undefined, { type: "number", min: "1", step: "1", inputmode: "numeric", "data-testid": "page-input", "aria-label": "Go to page", placeholder: "page…" });
  const archives = el("select", "", undefined, { "data-testid": "archives", "aria-label": "Open an archive" });
  const compact = el("button", "", "Compact…", { type: "button", "data-testid": "compact", "aria-label": "Compact this memory: preview the summary first" });
  const nav = el("div", "bar", undefined, { role: "group", "aria-label": "Pages, archives and compaction" });
  nav.append(order, first, prev, pageText, next, last, pageInput, archives, compact);

  order.onclick = () => {
    model.set("newest_first", !model.get("newest_first"));
    for (const [trait] of Object.values(PAGER)) model.set(trait, 0);
    model.save_changes();
  };
  first.onclick = () => goTo(model, 0);
  prev.onclick = () => goTo(model, pages(model).page - 1);
  next.onclick = () => goTo(model, pages(model).page + 1);
  last.onclick = () => goTo(model, pages(model).count - 1);
  archives.onchange = () => openArchive(archives.value);
  pageInput.onkeydown = (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    const wanted = Number.parseInt(pageInput.value, 10);
    if (Number.isFinite(wanted)) goTo(model, wanted - 1);
    pageInput.value = "";
  };
  pageInput.onchange = () => {
    const wanted = Number.parseInt(pageInput.value, 10);
    if (Number.isFinite(wanted)) goTo(model, wanted - 1);
  };
  compact.onclick = () => { model.send({ command: "preview" }); };
  return { nav, order, first, prev, pageText, next, last, pageInput, archives, compact };
}

// The page, the buttons that turn it (named for the order, or for results, as the panel's are)
// and the order.
function drawPager(model, v) {
  const { pageText, pageInput, first, prev, next, last, order } = v;
  const { page, count } = pages(model);
  pageText.textContent = phrase("page", { page: number(page + 1), pages: number(count) });
  pageInput.max = String(count);
  if (document.activeElement !== pageInput) pageInput.value = "";
  const pager = mode(model) === "search" ? "results" : model.get("newest_first") ? "newest first" : "oldest first";
  pageButtons(pager).buttons.forEach((name, at) => {
    [first, prev, next, last][at].textContent = name;
  });
  const focused = document.activeElement as HTMLButtonElement | null;
  prev.disabled = first.disabled = page <= 0;
  next.disabled = last.disabled = page >= count - 1;
  // A button that turned the page to its end is disabled now: the page it shows takes the
  // focus, so a keyboard user keeps their place (and keys stay in the widget).
  if (focused && [first, prev, next, last].includes(focused) && focused.disabled) pageText.focus();
  const newest = model.get("newest_first");
  order.textContent = newest ? "Newest first" : "Oldest first";
  order.setAttribute("aria-label", newest ? "Order: newest first (show oldest first)" : "Order: oldest first (show newest first)");
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
