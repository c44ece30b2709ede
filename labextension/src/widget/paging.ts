// What the message list shows (the memory, an archive, or search results) and its pages: each
// mode has its own page and total traits. The maths is the views' (views/paging.ts).
import { pageCount, pageWithin } from "../views/paging";
import type { Model } from "./model";

type Mode = "memory" | "archive" | "search";

function mode(model: Model): Mode {
  if (model.get("query").trim()) return "search";
  return model.get("open_archive") ? "archive" : "memory";
}

const PAGER: Record<Mode, [string, string]> = {
  memory: ["page", "listed_total"],
  archive: ["archive_page", "archive_total"],
  search: ["search_page", "search_total"],
};

function pages(model: Model): { trait: string; page: number; count: number } {
  const [trait, totalTrait] = PAGER[mode(model)];
  return { trait, page: model.get(trait), count: pageCount(model.get(totalTrait), model.get("page_size")) };
}

function goTo(model: Model, page: number): void {
  const { trait, count } = pages(model);
  model.set(trait, pageWithin(page, count));
  model.save_changes();
}

export { PAGER, goTo, mode, pages };
export type { Mode };
