# syntax=docker/dockerfile:1
# One image for every Herald service; the command picks what runs (infra/container/entrypoint.mjs):
#   docker build -t herald .
#   docker run --init --rm herald help
#   docker run --init -e AMQP_URL=… -e DATABASE_URL=… herald demuxer
# compose.yaml runs the whole system with RabbitMQ and PostgreSQL.

ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: install everything, bundle the services with esbuild, then drop dev dependencies ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# What the build needs: the lock, the workspaces (apps, libs: npm ci links them) and infra
# (the bundler script, the migrations); npm ci's postinstall applies patches/.
COPY package.json package-lock.json ./
COPY patches ./patches
COPY apps ./apps
COPY libs ./libs
COPY infra ./infra
RUN npm ci --no-audit --no-fund \
    && npm run build \
    && npm prune --omit=dev --no-audit --no-fund \
    && npm cache clean --force

# --- runtime: the build tree after pruning (bundles, production dependencies, migrations, and the
# sources prepare and the CLI run through tsx, esbuild's compiler with them); not root ---
# No --enable-source-maps: it keeps each bundle's parsed map in every service's heap (about 28 MB,
# several times that of peak RSS); map a logged stack with `docker run -i herald herald stack < stack.txt`.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HTTP_PORT=9400 \
    SANDBOX_STATE_DIR=/var/lib/herald/sandbox
WORKDIR /app
# The sandbox's state (certificate, keys, sandbox.json) is the only thing written at run time.
RUN mkdir -p /var/lib/herald/sandbox && chown -R node:node /var/lib/herald
# Owned by root, so the service user can read the code but not change it.
COPY --from=build /app /app
USER node
# The HTTP API, the monitor's dashboard, every service's /metrics and /healthz (HTTP_PORT).
EXPOSE 8080 9470 9400
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "infra/container/healthcheck.mjs"]
ENTRYPOINT ["node", "infra/container/entrypoint.mjs"]
CMD ["help"]
