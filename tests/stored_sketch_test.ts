/** The sketch parts kept in memory before a write (src/reports/stored_sketch.ts). */
import assert from "node:assert/strict";
import { sketchPart, sketchPartName } from "../src/reports/stored_sketch.ts";

Deno.test("a sketch part is named by its fields, whatever their order", () => {
  assert.equal(
    sketchPartName({ projectId: 1, version: "2", kind: "crash", day: 3 }),
    sketchPartName({ day: 3, kind: "crash", version: "2", projectId: 1 }),
  );
  assert.notEqual(
    sketchPartName({ projectId: 1, releaseId: 2 }),
    sketchPartName({ projectId: 2, releaseId: 1 }),
  );
  // A space in a value cannot make one group's name another's.
  assert.notEqual(
    sketchPartName({ version: "1 crash", kind: "install" }),
    sketchPartName({ version: "1", kind: "crash install" }),
  );
  const parts = new Map<string, { projectId: number; day: number; sketch: Uint8Array }>();
  const first = sketchPart(parts, { projectId: 1, day: 3 });
  assert.equal(sketchPart(parts, { day: 3, projectId: 1 }), first);
  assert.equal(parts.size, 1);
});
