/**
 * Which S3 client: @aws-sdk/client-s3 (+ lib-storage) or aws4fetch, measured
 * against the same radosgw in separate processes: start-up (import to first
 * answer), RSS, multipart upload and GET throughput of one object.
 *
 *   deno run -A bench/s3_clients.ts http://127.0.0.1:PORT KEY SECRET [MiB]
 *
 * Without a running radosgw, start one with tools/start_rgw.sh (see docs/contributing.md).
 */
import { fillerStream } from "./filler.ts";
const [endpoint, accessKeyId, secretAccessKey, mib = "64"] = Deno.args;
const lib = Deno.env.get("S3_CLIENT_LIB");
const BUCKET = "client-bench";
const PART = 8 * 1024 * 1024;

async function drain(body: ReadableStream<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const chunk of body) n += chunk.byteLength;
  return n;
}

const rssMiB = () => Math.round(Deno.memoryUsage().rss / 1024 / 1024);

async function runSdk(bytes: number) {
  const t0 = performance.now();
  const { S3Client, HeadBucketCommand, GetObjectCommand, CreateBucketCommand } = await import(
    "@aws-sdk/client-s3"
  );
  const { Upload } = await import("@aws-sdk/lib-storage");
  const fetchHandler = lib === "sdk-fetch"
    ? { requestHandler: new (await import("@smithy/fetch-http-handler")).FetchHttpHandler() }
    : {};
  const s3 = new S3Client({
    ...fetchHandler,
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId, secretAccessKey },
  });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET })).catch(() => {});
  await s3.send(new HeadBucketCommand({ Bucket: BUCKET }));
  const startup = performance.now() - t0;
  const rssIdle = rssMiB();
  const t1 = performance.now();
  await new Upload({
    client: s3,
    params: { Bucket: BUCKET, Key: "sdk", Body: fillerStream(bytes) },
    partSize: PART,
    queueSize: 4,
  }).done();
  const up = performance.now() - t1;
  const rssUp = rssMiB();
  const t2 = performance.now();
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: "sdk" }));
  const n = await drain(got.Body!.transformToWebStream());
  const down = performance.now() - t2;
  return { startup, rssIdle, rssUp, up, down, n };
}

async function runAws4fetch(bytes: number) {
  const t0 = performance.now();
  const { AwsClient } = await import("aws4fetch");
  const aws = new AwsClient({ accessKeyId, secretAccessKey, service: "s3", region: "us-east-1" });
  const base = `${endpoint}/${BUCKET}`;
  await aws.fetch(base, { method: "PUT" }).then((r) => r.body?.cancel());
  const head = await aws.fetch(base, { method: "HEAD" });
  if (!head.ok) throw new Error(`HEAD bucket ${head.status}`);
  const startup = performance.now() - t0;
  const rssIdle = rssMiB();
  const t1 = performance.now();
  // Multipart by hand: the part of lib-storage that aws4fetch does not have.
  const created = await (await aws.fetch(`${base}/a4f?uploads`, { method: "POST" })).text();
  const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(created)![1];
  const etags: string[] = [];
  const inFlight: Promise<void>[] = [];
  let part = new Uint8Array(PART), filled = 0;
  const send = (body: Uint8Array, no: number) =>
    aws.fetch(`${base}/a4f?partNumber=${no}&uploadId=${uploadId}`, {
      method: "PUT",
      body: body as BodyInit,
    })
      .then(async (r) => {
        await r.body?.cancel();
        etags[no - 1] = r.headers.get("etag")!;
      });
  for await (const chunk of fillerStream(bytes)) {
    part.set(chunk, filled);
    filled += chunk.byteLength;
    if (filled === PART) {
      inFlight.push(send(part, etags.length + inFlight.length + 1));
      if (inFlight.length >= 4) await Promise.all(inFlight.splice(0));
      part = new Uint8Array(PART);
      filled = 0;
    }
  }
  await Promise.all(inFlight.splice(0));
  if (filled > 0) await send(part.subarray(0, filled), etags.length + 1);
  const xml = `<CompleteMultipartUpload>${
    etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${e}</ETag></Part>`).join("")
  }</CompleteMultipartUpload>`;
  const done = await aws.fetch(`${base}/a4f?uploadId=${uploadId}`, { method: "POST", body: xml });
  if (!done.ok) throw new Error(`complete ${done.status} ${await done.text()}`);
  await done.body?.cancel();
  const up = performance.now() - t1;
  const rssUp = rssMiB();
  const t2 = performance.now();
  const got = await aws.fetch(`${base}/a4f`);
  const n = await drain(got.body!);
  const down = performance.now() - t2;
  return { startup, rssIdle, rssUp, up, down, n };
}

if (lib !== undefined) {
  const bytes = Number(mib) * 1024 * 1024;
  const r = lib !== "aws4fetch" ? await runSdk(bytes) : await runAws4fetch(bytes);
  if (r.n !== bytes) throw new Error(`read ${r.n} of ${bytes} bytes`);
  console.log(JSON.stringify({ lib, ...r, mib: Number(mib) }));
} else {
  console.log(
    "| client | start-up ms | RSS idle MiB | RSS after upload MiB | upload MiB/s | GET MiB/s |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const name of ["sdk", "sdk-fetch", "aws4fetch", "sdk", "sdk-fetch", "aws4fetch"]) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL(import.meta.url).pathname, ...Deno.args],
      env: { S3_CLIENT_LIB: name },
      stderr: "inherit",
    }).output();
    const r = JSON.parse(new TextDecoder().decode(out.stdout));
    const rate = (ms: number) => (r.mib / (ms / 1000)).toFixed(0);
    console.log(
      `| ${name} | ${r.startup.toFixed(0)} | ${r.rssIdle} | ${r.rssUp} | ${rate(r.up)} | ${
        rate(r.down)
      } |`,
    );
  }
}
