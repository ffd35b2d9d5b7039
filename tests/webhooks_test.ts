/**
 * Webhooks (docs/webhooks.md): the Standard Webhooks signature, the SSRF guard, and
 * delivery from the KV outbox to a real receiver on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import {
  startReceiver,
  startTestWorker,
  subscribeReceiver,
  verifiesWith,
} from "./webhook_receiver.ts";
import {
  checkTarget,
  nonPublicReason,
  RefusedTargetError,
  UnresolvedTargetError,
} from "../src/webhooks/address_guard.ts";
import { signDelivery, verifyDelivery } from "../src/webhooks/signature.ts";
import { webhookSecretKey } from "../src/lib/webhook_secret.ts";
import { attemptDelivery } from "../src/webhooks/send.ts";
import { nextAttemptAt, RETRY_DELAYS_SECONDS } from "../src/webhooks/worker.ts";
import { createApiKey, setApiKeyActive } from "../src/credentials/api_keys.ts";
import { deleteReleaseRecord } from "../src/lifecycle/delete_records.ts";
import { createProject } from "../src/projects/projects.ts";
import { createRelease, publishDraft, setReleaseState } from "../src/releases/releases.ts";
import {
  createWebhookEndpoint,
  emitWebhookEvent,
  listWebhookDeliveries,
  replaceWebhookSecret,
  resendWebhookDelivery,
  type WebhookEndpoint,
  type WebhookEventBody,
} from "../src/webhooks/outbox.ts";
import { waitFor } from "./helpers.ts";
import { createStore } from "../src/kv/store.ts";

Deno.test("webhook signatures follow the Standard Webhooks spec", async (t) => {
  // The spec's secret form: whsec_ and the base64 of the key (here 24 bytes).
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const other = "whsec_" + btoa("another key of 24 bytes!");
  const parts = {
    deliveryId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    timestamp: 1_614_265_330,
    body: '{"test": 2432232314}',
  };
  await t.step(
    "is v1, and the base64 HMAC-SHA256 of id.timestamp.body under the decoded key",
    () => {
      const key = Uint8Array.from(atob("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), (c) => c.charCodeAt(0));
      const mac = createHmac("sha256", key)
        .update(`${parts.deliveryId}.${parts.timestamp}.${parts.body}`)
        .digest("base64");
      assert.equal(signDelivery([secret], parts), `v1,${mac}`);
      // The library's own signature of the same parts.
      const library = new Webhook(secret).sign(
        parts.deliveryId,
        new Date(parts.timestamp * 1000),
        parts.body,
      );
      assert.equal(signDelivery([secret], parts), library);
    },
  );
  await t.step("several secrets give several signatures, separated by spaces", () => {
    const header = signDelivery([secret, other], parts);
    assert.equal(header.split(" ").length, 2);
    assert.equal(verifyDelivery(secret, parts, header), true);
    assert.equal(verifyDelivery(other, parts, header), true);
    assert.equal(verifyDelivery("whsec_" + btoa("a third key, not signing"), parts, header), false);
  });
  await t.step("verifies only with the same secret and the same parts", () => {
    const header = signDelivery([secret], parts);
    assert.equal(verifyDelivery(secret, parts, header), true);
    assert.equal(verifyDelivery(other, parts, header), false);
    assert.equal(verifyDelivery(secret, { ...parts, body: '{"a":2}' }, header), false);
    assert.equal(verifyDelivery(secret, { ...parts, timestamp: 1 }, header), false);
  });
  await t.step("a secret that is not whsec_ and base64 of 24 to 64 bytes cannot sign", () => {
    for (
      const bad of [
        "whsec_" + "A".repeat(43), // base64url without padding, the form of earlier secrets
        "whsec_abc-def_ghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ",
        "whsec_" + btoa("too short"),
        btoa("a key of 24 bytes, no pfx"),
      ]
    ) {
      assert.equal(webhookSecretKey(bad), null, bad);
      assert.equal(signDelivery([bad], parts), "", bad);
    }
  });
});

/** The `verify` function of the hand-written snippet in docs/webhooks.md, imported as written. */
async function docsVerify(): Promise<
  (secret: string, headers: Record<string, string>, rawBody: string) => boolean
> {
  const doc = await Deno.readTextFile(new URL("../docs/webhooks.md", import.meta.url));
  const snippet = [...doc.matchAll(/```js\n([\s\S]*?)```/g)]
    .map((match) => match[1])
    .find((code) => code.includes("function verify("));
  assert.ok(snippet, "docs/webhooks.md has the snippet");
  const file = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.writeTextFile(
      file,
      `import { Buffer } from "node:buffer";\n${snippet}\nexport { verify };\n`,
    );
    return (await import(`file://${file}`)).verify;
  } finally {
    await Deno.remove(file);
  }
}

Deno.test("the verification snippet of docs/webhooks.md agrees with the library", async () => {
  const verify = await docsVerify();
  const current = "whsec_" + btoa("the current key, 24 byte");
  const replaced = "whsec_" + btoa("the replaced key, 24 byt");
  const body = '{"id":"e1","type":"key.created"}';
  const realNow = Date.now;
  const nowSeconds = 1_800_000_000;
  Date.now = () => nowSeconds * 1000 + 999;
  try {
    for (const age of [0, -300, 300, 301, -301]) {
      const timestamp = nowSeconds - age;
      const headers = {
        "webhook-id": "d1",
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signDelivery([current, replaced], {
          deliveryId: "d1",
          timestamp,
          body,
        }),
      };
      for (const secret of [current, replaced]) {
        let library = true;
        try {
          new Webhook(secret).verify(body, headers);
        } catch {
          library = false;
        }
        assert.equal(library, Math.abs(age) <= 300, `library, ${age} s`);
        assert.equal(verify(secret, headers, body), library, `snippet, ${age} s`);
      }
      const other = "whsec_" + btoa("not a key that signed it");
      assert.equal(verify(other, headers, body), false);
      assert.equal(verify(current, headers, body + " "), false);
    }
  } finally {
    Date.now = realNow;
  }
});

Deno.test("webhook SSRF guard", async (t) => {
  await t.step("names every non-public address class", () => {
    for (
      const address of [
        "127.0.0.1",
        "127.8.9.10",
        "0.0.0.0",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.255",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "224.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "ff02::1",
      ]
    ) {
      assert.notEqual(nonPublicReason(address), null, address);
    }
    for (
      const address of [
        "93.184.216.34",
        "8.8.8.8",
        "172.32.0.1",
        "198.17.255.255",
        "198.20.0.1",
        "192.0.1.1",
        "2606:4700::1111",
        "2001:4860:4860::8888",
        "2003::1",
        "64:ff9b:2::1",
      ]
    ) {
      assert.equal(nonPublicReason(address), null, address);
    }
  });
  await t.step("names the translation, documentation and reserved ranges as well", () => {
    const expected: [string, RegExp][] = [
      ["64:ff9b::8.8.8.8", /NAT64/],
      ["64:ff9b::a00:1", /NAT64/],
      ["64:ff9b:1:ffff::1", /NAT64/],
      ["2002:c000:0204::1", /6to4/],
      ["2002:0a00:0001::1", /6to4/],
      ["2001:0:4136:e378:8000:63bf:3fff:fdd2", /Teredo/],
      ["::ffff:8.8.8.8", /IPv4-mapped/],
      ["::ffff:0:8.8.8.8", /IPv4-translated/],
      ["::8.8.8.8", /IPv4-compatible/],
      ["fec0::1", /site-local/],
      ["feff::1", /site-local/],
      ["2001:db8::1", /documentation/],
      ["198.18.0.1", /benchmarking/],
      ["198.19.255.255", /benchmarking/],
      ["192.0.0.8", /IETF/],
      ["192.0.2.10", /TEST-NET-1/],
      ["198.51.100.7", /TEST-NET-2/],
      ["203.0.113.7", /TEST-NET-3/],
    ];
    for (const [address, reason] of expected) {
      assert.match(nonPublicReason(address) ?? "public", reason, address);
    }
  });
  await t.step("refuses loopback, private and link-local targets without the setting", async () => {
    for (
      const url of [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.5/hook",
        "http://[::ffff:192.168.0.1]/hook",
        "ftp://example.com/hook",
      ]
    ) {
      await assert.rejects(checkTarget(url, { allowPrivate: false }), RefusedTargetError, url);
    }
  });
  await t.step("checks every address a host name resolves to", async () => {
    const resolve = (host: string) =>
      Promise.resolve(host === "mixed.example" ? ["93.184.216.34", "10.0.0.1"] : ["93.184.216.34"]);
    await assert.rejects(
      checkTarget("https://mixed.example/hook", { allowPrivate: false, resolve }),
      /resolves to 10\.0\.0\.1, a private address/,
    );
    const ok = await checkTarget("https://public.example/hook", { allowPrivate: false, resolve });
    assert.equal(ok.url.hostname, "public.example");
    assert.deepEqual(ok.addresses, ["93.184.216.34"], "the addresses to connect to");
  });
  await t.step("a name that does not resolve is a DNS failure, not a refusal", async () => {
    for (
      const resolve of [
        () => Promise.resolve([]),
        () => Promise.reject(new Error("getaddrinfo EAI_AGAIN nowhere.example")),
      ]
    ) {
      await assert.rejects(
        checkTarget("https://nowhere.example/", { allowPrivate: false, resolve }),
        UnresolvedTargetError,
      );
    }
  });
  await t.step("allows private targets when the operator says so", async () => {
    const target = await checkTarget("http://127.0.0.1:9/hook", { allowPrivate: true });
    assert.equal(target.url.port, "9");
    assert.deepEqual(target.addresses, ["127.0.0.1"]);
  });
});

/**
 * A test CA and a certificate for hook.example.test signed by it (rustls refuses a self-signed
 * leaf), made with openssl in a temp dir; null without openssl.
 */
async function testCertificate(): Promise<{ ca: string; cert: string; key: string } | null> {
  const dir = await Deno.makeTempDir({ prefix: "webhook-cert-" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  const steps = [
    ["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=CA"],
    ["req", ...ec, "-keyout", "key.pem", "-out", "leaf.csr", "-subj", "/CN=hook.example.test"],
    ["x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"]
      .concat(["-days", "2", "-extfile", "san.ext", "-out", "cert.pem"]),
  ];
  try {
    await Deno.writeTextFile(`${dir}/san.ext`, "subjectAltName=DNS:hook.example.test\n");
    for (const args of steps) {
      const made = await new Deno.Command("openssl", {
        args,
        cwd: dir,
        stdout: "null",
        stderr: "null",
      }).output().catch(() => null);
      if (made === null || !made.success) return null;
    }
    const read = (name: string) => Deno.readTextFile(`${dir}/${name}`);
    return { ca: await read("ca.pem"), cert: await read("cert.pem"), key: await read("key.pem") };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a delivery connects to the address the check resolved", async (t) => {
  const secret = "whsec_" + btoa("a key of 24 bytes, here!");
  // hook.example.test exists for no resolver but the check's: only a pinned connection arrives.
  const resolve = (host: string) =>
    Promise.resolve(host === "hook.example.test" ? ["127.0.0.1"] : []);
  const attempt = (url: string, caCerts?: string[]) =>
    attemptDelivery({
      url,
      secrets: [secret],
      deliveryId: "d1",
      event: "key.created",
      body: '{"a":1}',
      allowPrivate: true,
      timeoutMs: 5000,
      resolve,
      caCerts,
    });

  await t.step("http: to the checked address, with the URL's Host", async () => {
    const hosts: string[] = [];
    const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
      hosts.push(req.headers.get("host") ?? "");
      return new Response(null, { status: 204 });
    });
    try {
      const result = await attempt(`http://hook.example.test:${server.addr.port}/hook`);
      assert.deepEqual(result, {
        ok: true,
        status: 204,
        error: null,
        permanent: false,
        answer: "",
      });
      assert.deepEqual(hosts, [`hook.example.test:${server.addr.port}`]);
    } finally {
      await server.shutdown();
    }
  });

  const tls = await testCertificate();
  await t.step({
    name: "https: to the checked address, the certificate checked for the URL's host",
    ignore: tls === null,
    fn: async () => {
      const { ca, cert, key } = tls!;
      const server = Deno.serve(
        { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
        async (req) => {
          const headers = Object.fromEntries(req.headers);
          new Webhook(secret).verify(await req.text(), headers);
          return new Response(null, { status: 200 });
        },
      );
      try {
        const url = `https://hook.example.test:${server.addr.port}/hook`;
        assert.deepEqual(await attempt(url, [ca]), {
          ok: true,
          status: 200,
          error: null,
          permanent: false,
          answer: "",
        });
        const untrusted = await attempt(url);
        assert.equal(untrusted.ok, false, "a certificate no root vouches for is refused");
        assert.match(untrusted.error!, /certificate/);
        const wrongName = await attempt(
          `https://127.0.0.1:${server.addr.port}/hook`,
          [ca],
        );
        assert.match(
          wrongName.error!,
          /not valid for name/,
          "the name is checked, not the address",
        );
      } finally {
        await server.shutdown();
      }
    },
  });

  await t.step("the start of the answer's body is kept, at most 1 KiB", async () => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("é".repeat(600) + "end", { status: 503 }),
    );
    try {
      const result = await attempt(`http://hook.example.test:${server.addr.port}/hook`);
      assert.equal(result.status, 503);
      assert.equal(result.error, "the receiver answered 503");
      assert.equal(new TextEncoder().encode(result.answer!).length <= 1024 + 3, true);
      assert.ok(result.answer!.startsWith("é".repeat(500)));
      assert.ok(!result.answer!.includes("end"));
    } finally {
      await server.shutdown();
    }
  });

  await t.step("a receiver that does not answer in time fails the attempt", async () => {
    const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const held: Deno.Conn[] = [];
    (async () => {
      for await (const conn of silent) held.push(conn);
    })();
    try {
      const result = await attemptDelivery({
        url: `http://hook.example.test:${silent.addr.port}/hook`,
        secrets: [secret],
        deliveryId: "d2",
        event: "key.created",
        body: "{}",
        allowPrivate: true,
        timeoutMs: 300,
        resolve,
      });
      assert.deepEqual(result, {
        ok: false,
        status: null,
        error: "no answer in 300 ms",
        permanent: false,
        answer: null,
      });
    } finally {
      silent.close();
      for (const conn of held) conn.close();
    }
  });

  await t.step("a DNS failure is retried, not marked a refused target", async () => {
    const result = await attempt("https://nowhere.example.test/hook");
    assert.equal(result.ok, false);
    assert.equal(result.permanent, false);
    assert.match(result.error!, /nowhere\.example\.test does not resolve/);
  });
});

Deno.test("webhook retry schedule lasts at least 24 hours", () => {
  const total = RETRY_DELAYS_SECONDS.reduce((a, b) => a + b, 0);
  assert.ok(total >= 24 * 3600, `${total} s`);
  assert.equal(nextAttemptAt(1, 0), 10_000);
  assert.equal(nextAttemptAt(RETRY_DELAYS_SECONDS.length + 1, 0), null);
});

Deno.test("webhook delivery to a real receiver", async (t) => {
  const kv = await Deno.openKv(":memory:");
  const store = createStore(kv);
  let status = 204;
  const receiver = startReceiver(() => status);
  const worker = startTestWorker(store);
  try {
    const endpoint = await subscribeReceiver(store, receiver, {
      events: ["release.published", "key.created"],
    });
    assert.match(endpoint.secret!, /^whsec_[A-Za-z0-9+/]{43}=$/);

    await t.step("a subscribed event arrives once, signed with the endpoint's secret", async () => {
      await emitWebhookEvent(store, "release.published", { release: { id: 7 } });
      await emitWebhookEvent(store, "release.deleted", { release: { id: 8 } });
      await worker.tick();
      await worker.tick();
      assert.equal(receiver.received.length, 1);
      const [got] = receiver.received;
      assert.equal(got.valid, true);
      assert.equal(got.event, "release.published");
      assert.deepEqual((got.body as { data: unknown }).data, { release: { id: 7 } });
      const [logged] = await listWebhookDeliveries(store, endpoint.id);
      assert.equal(logged.status, "delivered");
      assert.equal(logged.id, got.id);
      assert.equal(logged.last_status, 204);
    });

    await t.step("a failed attempt is logged and due again later", async () => {
      status = 500;
      await emitWebhookEvent(store, "key.created", { key: { id: 1 } });
      await worker.tick();
      const [logged] = await listWebhookDeliveries(store, endpoint.id);
      assert.equal(logged.status, "pending");
      assert.equal(logged.attempts, 1);
      assert.equal(logged.last_status, 500);
      assert.ok(Date.parse(logged.next_attempt_at!) > Date.now() + 5000);
      const before = receiver.received.length;
      await worker.tick();
      assert.equal(receiver.received.length, before, "not sent again before it is due");
    });

    await t.step("send again: a new delivery of the same event", async () => {
      status = 200;
      const [first] = (await listWebhookDeliveries(store, endpoint.id)).slice(-1);
      const again = await resendWebhookDelivery(store, {
        endpointId: endpoint.id,
        deliveryId: first.id,
      });
      await worker.tick();
      const last = receiver.received.at(-1)!;
      assert.equal(last.id, again.id);
      assert.notEqual(again.id, first.id);
      assert.equal((last.body as { id: string }).id, first.event_id);
      assert.equal(last.valid, true);
    });

    await t.step("while a new secret overlaps the old one, both verify", async () => {
      const oldSecret = endpoint.secret!;
      const rotated = await replaceWebhookSecret(store, endpoint.id, { keepPrevious: true });
      assert.notEqual(rotated.secret, oldSecret);
      await emitWebhookEvent(store, "key.created", { key: { id: 2 } });
      await worker.tick();
      const during = receiver.received.at(-1)!;
      assert.equal(during.headers["webhook-signature"].split(" ").length, 2);
      assert.equal(verifiesWith(oldSecret, during), true, "a receiver not yet switched");
      assert.equal(verifiesWith(rotated.secret!, during), true, "a receiver already switched");

      const ended = await replaceWebhookSecret(store, endpoint.id, { keepPrevious: false });
      await emitWebhookEvent(store, "key.created", { key: { id: 3 } });
      await worker.tick();
      const after = receiver.received.at(-1)!;
      assert.equal(after.headers["webhook-signature"].split(" ").length, 1);
      assert.equal(verifiesWith(ended.secret!, after), true);
      assert.equal(verifiesWith(oldSecret, after), false, "the replaced secrets sign no more");
      assert.equal(verifiesWith(rotated.secret!, after), false);
    });

    await t.step("an endpoint without a secret keeps its deliveries due", async () => {
      await kv.set(["webhook_endpoints", endpoint.id], {
        ...(await kv.get<WebhookEndpoint>(["webhook_endpoints", endpoint.id])).value!,
        secret: null,
        previous_secrets: [],
      });
      const before = receiver.received.length;
      await emitWebhookEvent(store, "key.created", { key: { id: 4 } });
      await worker.tick();
      assert.equal(receiver.received.length, before, "nothing unsigned is sent");
      const [logged] = await listWebhookDeliveries(store, endpoint.id);
      assert.equal(logged.status, "pending");
      assert.match(logged.last_error!, /no signing secret/);
    });
  } finally {
    worker.stop();
    await receiver.close();
    kv.close();
  }
});

Deno.test("webhook deliveries to private targets are refused without the setting", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = createStore(kv);
  const receiver = startReceiver();
  const worker = startTestWorker(store, { allowPrivate: false });
  try {
    const endpoint = await subscribeReceiver(store, receiver, { events: ["release.archived"] });
    await emitWebhookEvent(store, "release.archived", { release: { id: 1 } });
    await worker.tick();
    await waitFor(
      "the first attempt",
      async () => (await listWebhookDeliveries(store, endpoint.id))[0]?.attempts === 1,
      10_000,
    );
    const [logged] = await listWebhookDeliveries(store, endpoint.id);
    assert.equal(logged.status, "failed");
    assert.match(logged.last_error!, /refused target: 127\.0\.0\.1 .*loopback/);
    assert.equal(receiver.received.length, 0);
  } finally {
    worker.stop();
    await receiver.close();
    kv.close();
  }
});

Deno.test("a webhook delivery whose host does not resolve is retried", async () => {
  const kv = await Deno.openKv(":memory:");
  const store = createStore(kv);
  const worker = startTestWorker(store, {
    allowPrivate: false,
    resolve: () => Promise.reject(new Error("getaddrinfo EAI_AGAIN hooks.example.com")),
  });
  try {
    const endpoint = await createWebhookEndpoint(store, {
      url: "https://hooks.example.com/in",
      events: ["release.archived"],
      created_by: "admin",
    });
    await emitWebhookEvent(store, "release.archived", { release: { id: 1 } });
    await worker.tick();
    const [logged] = await listWebhookDeliveries(store, endpoint.id);
    assert.equal(logged.attempts, 1);
    assert.equal(logged.status, "pending", "due again, not failed for good");
    assert.match(logged.last_error!, /hooks\.example\.com does not resolve/);
    assert.ok(Date.parse(logged.next_attempt_at!) > Date.now());
  } finally {
    worker.stop();
    kv.close();
  }
});

Deno.test("release and key writes carry their webhook events in the same commit", async (t) => {
  const kv = await Deno.openKv(":memory:");
  const store = createStore(kv);
  const events = async () => {
    const found: WebhookEventBody[] = [];
    for await (const e of kv.list<WebhookEventBody>({ prefix: ["webhook_events"] })) {
      found.push(e.value);
      await kv.delete(e.key);
    }
    return found.map((e) => `${e.type} ${JSON.stringify(e.data)}`);
  };
  try {
    const project = await createProject(store, { name: "App", slug: "app" });
    const fields = {
      project_id: project.id,
      filename: "app.zip",
      storage_key: "k",
      checksum_sha256: "a".repeat(64),
      size_bytes: 1,
    };
    await t.step("an active upload is published; a draft is not until published", async () => {
      const active = await createRelease(store, { ...fields, version: "1.0.0" });
      const draft = await createRelease(store, { ...fields, version: "1.1.0", draft: true });
      assert.deepEqual(await events(), [
        `release.published {"release":{"id":${active.id},"project_id":${project.id},"version":"1.0.0","state":"active"}}`,
      ]);
      await publishDraft(store, draft.id, { makeLatest: true });
      assert.deepEqual(await events(), [
        `release.published {"release":{"id":${draft.id},"project_id":${project.id},"version":"1.1.0","state":"active"}}`,
      ]);
      await setReleaseState(store, active.id, "archived");
      assert.deepEqual(await events(), [
        `release.archived {"release":{"id":${active.id},"project_id":${project.id},"version":"1.0.0","state":"archived"}}`,
      ]);
      await setReleaseState(store, active.id, "archived");
      assert.deepEqual(await events(), [], "no event without a change");
      await deleteReleaseRecord(store, active.id);
      assert.deepEqual((await events()).map((e) => e.split(" ")[0]), ["release.deleted"]);
    });
    await t.step("a key created, then disabled", async () => {
      const { apiKey } = await createApiKey(store, {
        name: "ci",
        can_download: true,
        scope_mode: "all_projects",
      });
      await setApiKeyActive(store, apiKey.id, false);
      await setApiKeyActive(store, apiKey.id, false);
      assert.deepEqual((await events()).sort(), [
        `key.created {"key":{"id":${apiKey.id},"name":"ci","expires_at":null}}`,
        `key.disabled {"key":{"id":${apiKey.id},"name":"ci","expires_at":null}}`,
      ]);
    });
    await t.step("a key expiring within 7 days is announced once", async () => {
      const soon = new Date(Date.now() + 3 * 86_400_000).toISOString();
      const later = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const { apiKey } = await createApiKey(store, {
        name: "soon",
        can_download: true,
        scope_mode: "all_projects",
        expires_at: soon,
      });
      await createApiKey(store, {
        name: "later",
        can_download: true,
        scope_mode: "all_projects",
        expires_at: later,
      });
      await events();
      const worker = startTestWorker(store, { allowPrivate: false, timeoutMs: 1000 });
      await worker.tick();
      worker.stop();
      const again = startTestWorker(store, { allowPrivate: false, timeoutMs: 1000 });
      await again.tick();
      again.stop();
      // The worker fans events out at once; none is subscribed, so look at the notices instead.
      const notices: Deno.KvKey[] = [];
      for await (const e of kv.list({ prefix: ["webhook_expiry_notices"] })) notices.push(e.key);
      assert.deepEqual(notices, [["webhook_expiry_notices", apiKey.id, apiKey.expires_at!]]);
    });
  } finally {
    kv.close();
  }
});
