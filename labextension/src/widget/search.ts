// Search: the field and "archives too" (at the start of the display bar). What it found is
// worded in Python (the `search_caption` trait, as the panel words it).
import { el } from "../views/dom";
import { label } from "../views/vocabulary";

function searchView(model) {
  const search = el("input", "", undefined, { type: "search", placeholder: label("search placeholder"), "data-testid": "search", "aria-label": label("search placeholder") });
  const inArchives = el("input", "", undefined, { type: "checkbox", "data-testid": "search-archives" });
  const archivesLabel = el("label", "", " archives too");
  archivesLabel.prepend(inArchives);
  search.oninput = () => { model.set("query", search.value); model.save_changes(); };
  inArchives.onchange = () => { model.set("search_archives", inArchives.checked); model.save_changes(); };
  function draw() {
    inArchives.checked = model.get("search_archives");
    if (document.activeElement !== search) search.value = model.get("query");
  }
  return { search, archivesLabel, draw };
}

export { searchView };
