# Update Distribution Service: one Deno process, all state in the /app/data volume.
FROM denoland/deno:2.9.6

WORKDIR /app

# The application, owned by the unprivileged `deno` user the base image provides.
COPY --chown=deno:deno . .
RUN mkdir -p /app/data && chown deno:deno /app /app/data

USER deno

# Fetch and compile the dependencies at build time (into $DENO_DIR, owned by `deno`),
# so the container starts without network access to npm.
RUN deno cache main.ts

ENV APP_HOST=0.0.0.0 \
    APP_PORT=8000 \
    APP_DATA_DIR=./data

VOLUME ["/app/data"]
EXPOSE 8000

# /healthz answers 200 only when the KV database answers too.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["deno", "eval", "const r = await fetch(`http://127.0.0.1:${Deno.env.get('APP_PORT') ?? '8000'}/healthz`); Deno.exit(r.ok ? 0 : 1)"]

# `deno task start`: --allow-net, --allow-env=APP_*, read/write on ./data only.
CMD ["deno", "task", "start"]
