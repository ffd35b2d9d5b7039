import assert from "node:assert/strict";
import { compareVersions, isNewerVersion, parseSemver } from "../client/update_client.ts";

Deno.test("version rule of the reference client", async (t) => {
  await t.step("semver precedence, pre-releases included (semver.org §11)", () => {
    const ordered = [
      "1.0.0-alpha",
      "1.0.0-alpha.1",
      "1.0.0-alpha.beta",
      "1.0.0-beta",
      "1.0.0-beta.2",
      "1.0.0-beta.11",
      "1.0.0-rc.1",
      "1.0.0",
      "1.0.1",
      "1.9.0",
      "1.10.0",
      "2.0.0",
    ];
    for (let i = 0; i < ordered.length; i++) {
      for (let j = 0; j < ordered.length; j++) {
        const expected = Math.sign(i - j);
        assert.equal(
          compareVersions(ordered[i], ordered[j]),
          expected,
          `${ordered[i]} vs ${ordered[j]}`,
        );
      }
    }
  });

  await t.step("build metadata is ignored and a leading v is allowed", () => {
    assert.equal(compareVersions("1.2.3+build.5", "1.2.3+build.9"), 0);
    assert.equal(compareVersions("v1.2.3", "1.2.3"), 0);
    assert.equal(compareVersions("V2.0.0", "v1.99.99"), 1);
    assert.equal(compareVersions("99999999999999999999.0.0", "99999999999999999998.0.0"), 1);
  });

  await t.step("anything that is not semver does not parse", () => {
    for (const text of ["1.0", "1", "01.0.0", "1.0.0-", "1.0.0-01", "2024.05.01.1", "latest", ""]) {
      assert.equal(parseSemver(text), null, text);
    }
    assert.equal(compareVersions("1.0", "1.0.0"), null);
  });

  await t.step("newer: semver precedence when both parse, else plain inequality", () => {
    assert.equal(isNewerVersion("1.10.0", "1.9.0"), true);
    assert.equal(isNewerVersion("1.9.0", "1.10.0"), false, "a downgrade is not an update");
    assert.equal(isNewerVersion("1.0.0", "1.0.0-rc.1"), true);
    assert.equal(isNewerVersion("1.0.0+b2", "1.0.0+b1"), false);
    assert.equal(isNewerVersion("2024-06", "2024-05"), true);
    assert.equal(isNewerVersion("2024-04", "2024-05"), true, "plain inequality: any change");
    assert.equal(isNewerVersion("build 17", " build 17 "), false);
    assert.equal(isNewerVersion("1.0", "1.0.0"), true, "one side not semver");
  });
});
