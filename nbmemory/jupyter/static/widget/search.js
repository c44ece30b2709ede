// Search: the field and "archives too" (at the start of the display bar), and the message
// list's heading while it shows the results.
import { el, number } from "./dom.js";

function searchView(model) {
  const search = el("input", {
    type: "search", placeholder: "Search memory", "data-testid": "search", "aria-label": "Search memory",
  });
  const inArchives = el("input", {
    type: "checkbox", "data-testid": "search-archives", "aria-label": "Search the archives too",
  });
  const archivesLabel = el("label", {}, " archives too");
  archivesLabel.prepend(inArchives);
  search.oninput = () => { model.set("query", search.value); model.save_changes(); };
  inArchives.onchange = () => { model.set("search_archives", inArchives.checked); model.save_changes(); };
  function draw() {
    inArchives.checked = model.get("search_archives");
    if (document.activeElement !== search) search.value = model.get("query");
  }
  return { search, archivesLabel, draw };
}

// What the message list's heading says of the results: how many match, and where it looked.
function searchHeading(model) {
  const total = model.get("search_total");
  const query = model.get("query").trim();
  const role = model.get("role");
  const where = (role ? ` among ${role}'s messages` : "")
    + (model.get("search_archives") ? " (archives too)" : " (MEMORY.md only; tick “archives too” to search the archives)");
  return total
    ? `${number(total)} ${total === 1 ? "message matches" : "messages match"} “${query}”${where}`
    : `No results: no message contains “${query}”${where}.`;
}

export { searchHeading, searchView };
