# Update Distribution Service: one Deno process, all state in the /app/data volume.
#
#   docker build -t update-distribution .
#   podman build --format docker -t update-distribution .     # keeps the HEALTHCHECK
#
# Without Docker Hub, build a local base first and pass it (see docs/operators.md):
#   tools/build_base_image.sh && podman build --format docker \
#     --build-arg DENO_IMAGE=localhost/uds-deno-base:2.9.6 -t update-distribution .
#
# Every RUN is in exec form and runs `deno` only, so the same file builds on the official image
# and on the slim local base (which has no shell).
ARG DENO_IMAGE=denoland/deno:2.9.6

# Stage 1: the dependencies the service runs, fetched with deno.lock enforced (--frozen).
FROM ${DENO_IMAGE} AS deps
# Only for builds behind a TLS-inspecting proxy: e.g. --build-arg DENO_TLS_CA_STORE=mozilla,system
# with the host's CA directory mounted. Never part of the final image.
ARG DENO_TLS_CA_STORE
ARG NPM_CONFIG_REGISTRY
WORKDIR /src
COPY deno.json deno.lock main.ts app.ts ./
COPY src/ src/
COPY admin/ admin/
COPY tools/ tools/
COPY docs/openapi.json docs/
ENV DENO_DIR=/deps
RUN ["deno", "cache", "--frozen", "main.ts", "tools/healthcheck.ts", "tools/data_paths.ts", "tools/backup.ts", "tools/restore.ts", "tools/migrate_artifacts.ts"]
# Deno fetches every package of the lockfile at start: keep only those these entry points reach
# (no test or benchmark packages), in deno.json, deno.lock and the cache alike. The build's own runs
# keep no V8 code cache: it would ship in /deps as megabytes of SQLite the service never reads.
RUN ["deno", "run", "--no-code-cache", "--allow-read", "--allow-write=deno.json,deno.lock,/deps", "--allow-run=deno", "--allow-env=DENO_DIR", "tools/runtime_deps.ts", "main.ts", "tools/healthcheck.ts", "tools/data_paths.ts", "tools/backup.ts", "tools/restore.ts", "tools/migrate_artifacts.ts"]
# Check: `deno run` loads every package of the (trimmed) lockfile; --cached-only fails on any missing.
RUN ["deno", "run", "--no-code-cache", "--cached-only", "--frozen", "--allow-env=APP_*", "tools/data_paths.ts"]

# Stage 2: the image. Code and dependencies belong to root and are read-only to the service;
# only /app/data (0700, uid 1993 = the base image's `deno` user) is writable.
FROM ${DENO_IMAGE}
WORKDIR /app
ENV DENO_DIR=/app/.deno \
    APP_HOST=0.0.0.0 \
    APP_PORT=8000 \
    APP_DATA_DIR=/app/data
COPY --from=deps /deps /app/.deno
COPY . .
COPY --from=deps /src/deno.json /src/deno.lock ./
RUN ["deno", "eval", "Deno.mkdirSync('/app/data'); Deno.chmodSync('/app/data', 0o700); Deno.chownSync('/app/data', 1993, 1993)"]

USER 1993:1993
EXPOSE 8000
# No VOLUME: mount one on /app/data (-v uds-data:/app/data); without it the data would go to an
# anonymous volume that `rm` silently orphans.

# GET /healthz on the address the service listens on (APP_HOST/APP_PORT; 0.0.0.0 -> 127.0.0.1).
# Docker keeps it; podman only with `podman build --format docker`.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["deno", "run", "--no-config", "--allow-net", "--allow-env=APP_HOST,APP_PORT", "tools/healthcheck.ts"]

# tini is PID 1: it forwards SIGTERM to the server, which drains downloads in flight
# (APP_SHUTDOWN_TIMEOUT_SECONDS; give `docker stop -t` / stop_grace_period a little more).
# The server runs directly (no resident `deno task`) with the permissions of `deno task start`
# for APP_DATA_DIR=/app/data, plus --allow-sys=uid to name the uid when the volume is not writable.
ENTRYPOINT ["/tini", "--"]
CMD ["deno", "run", "--cached-only", "--frozen", "--v8-flags=--max-semi-space-size=8", "--allow-net", "--allow-env=APP_*,AWS_*,_X_AMZN_*,HOME,USERPROFILE,HOMEPATH,HOMEDRIVE,DENO_KV_ACCESS_TOKEN,__MINIMATCH_TESTING_PLATFORM__", "--allow-read=./admin/static,/app/data", "--allow-write=/app/data", "--allow-sys=uid", "main.ts"]
