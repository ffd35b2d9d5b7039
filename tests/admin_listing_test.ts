/** Search and paging of the admin lists (`q`, `page`, rel="prev"/"next" links). */
import assert from "node:assert/strict";
import { listPage, PAGE_SIZE, pageSummary } from "../admin/listing.ts";

const items = Array.from(
  { length: 120 },
  (_, i) => ({ name: `Item ${i + 1}`, tag: i % 2 ? "odd" : "even" }),
);
const searchable = (item: typeof items[number]) => [item.name, item.tag];

Deno.test("list pages: 50 rows each, links between them", async (t) => {
  await t.step("the first page has only an older link", () => {
    const page = listPage(items, {}, { searchable, path: "/admin/x", anchor: "#list" });
    assert.equal(page.rows.length, PAGE_SIZE);
    assert.equal(page.rows[0].name, "Item 1");
    assert.equal(page.newer, null);
    assert.equal(page.older, "/admin/x?page=2#list");
    assert.equal(pageSummary(page, items.length, "items"), "1–50 of 120 items.");
  });

  await t.step("the last page has only a newer link; a page past the end shows the last", () => {
    const page = listPage(items, { page: "9" }, { searchable, path: "/admin/x" });
    assert.equal(page.page, 3);
    assert.equal(page.rows.length, 20);
    assert.equal(page.newer, "/admin/x?page=2");
    assert.equal(page.older, null);
  });

  await t.step("nonsense page numbers show the first page", () => {
    for (const raw of ["0", "-1", "abc", "1e3", ""]) {
      assert.equal(listPage(items, { page: raw }, { searchable, path: "/x" }).page, 1, raw);
    }
  });

  await t.step("search: every word must match, any case; links keep the search", () => {
    const page = listPage(items, { q: "  ITEM 1 odd " }, { searchable, path: "/admin/x" });
    assert.ok(page.rows.every((item) => item.name.includes("1") && item.tag === "odd"));
    assert.equal(page.q, "ITEM 1 odd");
    const many = listPage(items, { q: "even" }, { searchable, path: "/admin/x" });
    assert.equal(many.matched, 60);
    assert.equal(many.older, "/admin/x?q=even&page=2");
    assert.equal(pageSummary(many, 120, "items"), '1–50 of 60 of 120 items match "even".');
    const none = listPage(items, { q: "nothing" }, { searchable, path: "/admin/x" });
    assert.deepEqual(none.rows, []);
    assert.equal(pageSummary(none, 120, "items"), 'No items match "nothing".');
  });
});
