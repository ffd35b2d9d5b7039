/** The AWS SDK clients of the `s3` backend (see docs/operators.md for why this client). */
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { FetchHttpHandler } from "@smithy/fetch-http-handler";
import type { S3Config } from "../lib/config.ts";

export interface S3Clients {
  /** Uploads and bucket calls. */
  client: S3Client;
  /** Object reads and presigned URLs. */
  reader: S3Client;
}

/**
 * Two clients: uploads and bucket calls through the SDK's default (node:http)
 * handler, which keeps upload memory lowest; object reads through fetch,
 * which streams GET bodies about twice as fast under Deno.
 */
export function s3Clients(settings: S3Config): S3Clients {
  const timeoutMs = settings.timeoutSeconds * 1000;
  return {
    client: new S3Client(clientConfig(settings)),
    reader: new S3Client({
      ...clientConfig(settings),
      // Up to the answer's headers (connecting included); the body has its own
      // idle bound (s3_read.ts).
      requestHandler: new FetchHttpHandler({ requestTimeout: timeoutMs }),
    }),
  };
}

function clientConfig(settings: S3Config): S3ClientConfig {
  const timeoutMs = settings.timeoutSeconds * 1000;
  return {
    // Bounded waits (the SDK waits forever by default): connecting, and a
    // connection on which nothing moves. A call that times out is retried
    // (maxAttempts) and then fails with StorageUnavailableError.
    requestHandler: { connectionTimeout: timeoutMs, socketTimeout: timeoutMs },
    endpoint: settings.endpoint,
    region: settings.region,
    forcePathStyle: settings.forcePathStyle,
    credentials: settings.accessKeyId === undefined ? undefined : {
      accessKeyId: settings.accessKeyId,
      secretAccessKey: settings.secretAccessKey!,
    },
    // Only the checksums S3 itself requires: many S3-compatible stores do
    // not know the newer flexible checksums, and the SHA-256 is ours anyway.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // Given here, so the SDK does not look for them in ~/.aws (which the
    // service may not read): only APP_S3_* settings count.
    maxAttempts: 3,
    retryMode: "standard",
    defaultsMode: "standard",
    useFipsEndpoint: false,
    useDualstackEndpoint: false,
    disableS3ExpressSessionAuth: true,
    useArnRegion: false,
    authSchemePreference: [],
    defaultUserAgentProvider: () => Promise.resolve([["update-distribution-service"]]),
  };
}
