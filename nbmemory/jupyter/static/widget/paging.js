// What the message list shows (the memory, an archive, or search results) and its pages: each
// mode has its own page and total traits.

function mode(model) {
  if (model.get("query").trim()) return "search";
  return model.get("open_archive") ? "archive" : "memory";
}

const PAGER = {
  memory: ["page", "listed_total"],
  archive: ["archive_page", "archive_total"],
  search: ["search_page", "search_total"],
};

function pages(model) {
  const [pageTrait, totalTrait] = PAGER[mode(model)];
  const size = model.get("page_size") || 1;
  return { trait: pageTrait, page: model.get(pageTrait), count: Math.max(1, Math.ceil(model.get(totalTrait) / size)) };
}

function goTo(model, page) {
  const { trait, count } = pages(model);
  model.set(trait, Math.min(Math.max(0, page), count - 1));
  model.save_changes();
}

export { PAGER, goTo, mode, pages };
