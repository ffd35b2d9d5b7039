/** Search and paging of the admin lists (projects, API keys, a project's releases). */

export const PAGE_SIZE = 50;
/** Longer search text is cut off: no name, slug, version or file name is longer. */
export const SEARCH_MAX_LENGTH = 255;

/** What a list page shows: one page of the matching rows, and links to its neighbours. */
export interface ListPage<T> {
  rows: T[];
  /** The search text, trimmed ("" for none). */
  q: string;
  /** Rows that match the search, on every page. */
  matched: number;
  page: number;
  /** Link to the page before (rel="prev"), or null on the first page. */
  newer: string | null;
  /** Link to the page after (rel="next"), or null on the last page. */
  older: string | null;
  /** A search over a page read from KV: more rows may match after this page (`matched` is its rows). */
  searchedOn?: boolean;
}

/** The `q` and `page` query parameters of a list page. */
export interface ListQuery {
  q?: string;
  page?: string;
}

/** How a list is searched, and where its page links point (`path`, then `anchor`, e.g. "#list"). */
export interface ListOptions<T> {
  searchable: (item: T) => ReadonlyArray<string | undefined>;
  path: string;
  anchor?: string;
}

/**
 * Filters `items` by `q` (every word must occur, case-insensitive, in one of
 * the texts `searchable` gives for an item) and cuts out the requested page.
 * A page number past the end shows the last page.
 */
export function listPage<T>(
  items: readonly T[],
  query: ListQuery,
  { searchable, path, anchor = "" }: ListOptions<T>,
): ListPage<T> {
  const q = (query.q ?? "").trim().slice(0, SEARCH_MAX_LENGTH);
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const matching = words.length === 0 ? [...items] : items.filter((item) => {
    const text = searchable(item).filter(Boolean).join("\n").toLowerCase();
    return words.every((word) => text.includes(word));
  });
  const pages = Math.max(1, Math.ceil(matching.length / PAGE_SIZE));
  const requested = /^\d{1,6}$/.test(query.page ?? "") ? Number(query.page) : 1;
  const page = Math.min(Math.max(requested, 1), pages);
  const link = (to: number) => {
    const params = new URLSearchParams();
    if (q) params.set("q", q);
    if (to > 1) params.set("page", String(to));
    const search = params.toString();
    return `${path}${search ? `?${search}` : ""}${anchor}`;
  };
  return {
    rows: matching.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE),
    q,
    matched: matching.length,
    page,
    newer: page > 1 ? link(page - 1) : null,
    older: page < pages ? link(page + 1) : null,
  };
}

/** "Rows 51–100 of 120" (or "3 of 120 match") under a list. */
export function pageSummary(list: ListPage<unknown>, total: number, noun: string): string {
  if (list.searchedOn) {
    return list.matched === 0
      ? `No ${noun} match "${list.q}" this far; "Next" searches on.`
      : `${list.matched} ${noun} match "${list.q}" here; "Next" searches on.`;
  }
  if (list.matched === 0) return list.q ? `No ${noun} match "${list.q}".` : "";
  // "1 release.", not "1 releases." (the nouns are regular plurals).
  const counted = (n: number) => `${n} ${n === 1 ? noun.replace(/s$/, "") : noun}`;
  const first = (list.page - 1) * PAGE_SIZE + 1;
  const last = first + list.rows.length - 1;
  const range = list.matched > PAGE_SIZE ? `${first}–${last} of ` : "";
  return list.q
    ? `${range}${list.matched} of ${counted(total)} ${
      list.matched === 1 ? "matches" : "match"
    } "${list.q}".`
    : `${range}${counted(total)}.`;
}

/** Entries a search reads at most for one page of a long list (then it offers to search on). */
export const SEARCH_SCAN = 1_000;

/** The query of a list read from KV a page at a time: `page` only numbers the page shown. */
export interface CursorQuery extends ListQuery {
  after?: string;
  before?: string;
}

/** The search words of `q` (trimmed, cut to SEARCH_MAX_LENGTH), and a matcher for them. */
export function searchOf<T>(
  query: ListQuery,
  searchable: (item: T) => ReadonlyArray<string | undefined>,
): { q: string; match?: (item: T) => boolean } {
  const q = (query.q ?? "").trim().slice(0, SEARCH_MAX_LENGTH);
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return { q };
  return {
    q,
    match: (item) => {
      const text = searchable(item).filter(Boolean).join("\n").toLowerCase();
      return words.every((word) => text.includes(word));
    },
  };
}

/**
 * A list page from one page read from KV (a store `list…Page`): links carry
 * the search, the cursor and the number of the page they lead to. Without a
 * search, `matched` is the list's total (from the maintained counts); with
 * one, the rows of this page (how many match in all is not known without
 * reading everything).
 */
export function cursorListPage<T>(
  page: { rows: T[]; after: string | null; before: string | null; scanLimited: boolean },
  { query, q, total, path, anchor = "" }: {
    query: CursorQuery;
    q: string;
    total: number;
    path: string;
    anchor?: string;
  },
): ListPage<T> {
  const requested = /^\d{1,6}$/.test(query.page ?? "") ? Number(query.page) : 1;
  const first = query.after === undefined && query.before === undefined;
  const number = first ? 1 : Math.max(requested, 2);
  const link = (to: number, cursor: ["after" | "before", string] | null) => {
    const params = new URLSearchParams();
    if (q) params.set("q", q);
    if (to > 1 && cursor !== null) {
      params.set("page", String(to));
      params.set(...cursor);
    }
    const search = params.toString();
    return `${path}${search ? `?${search}` : ""}${anchor}`;
  };
  return {
    rows: page.rows,
    q,
    matched: q ? page.rows.length : total,
    page: number,
    newer: number <= 1
      ? null
      : number === 2 || page.before === null
      ? link(1, null)
      : link(number - 1, ["before", page.before]),
    older: page.after === null ? null : link(number + 1, ["after", page.after]),
    searchedOn: q !== "" && page.after !== null,
  };
}
