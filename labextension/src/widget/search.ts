// Search: the views' search form (../views/searchForm.ts) bound to the `query` and
// `search_archives` traits. What it found is worded in Python (the `search_caption` trait, as
// the panel words it) and listed by messages.ts.
import { searchForm } from "../views/searchForm";
import type { Model } from "./model";

function searchView(model: Model) {
  const form = searchForm({
    search: (query, archives) => {
      model.set("query", query);
      model.set("search_archives", archives);
      model.save_changes();
    },
    shown: () => Boolean(model.get("query").trim()),
    archives: (checked) => {
      model.set("search_archives", checked);
      model.save_changes();
    },
  });
  const draw = () => form.show(model.get("query"), model.get("search_archives"));
  return { form: form.node, draw };
}

export { searchView };
