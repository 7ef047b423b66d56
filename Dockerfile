# syntax=docker/dockerfile:1
# The voucher service as a container image: compiled JavaScript on Node 20, production
# dependencies only, run as the unprivileged `node` user, data in the /data volume.
#
#   docker build -t voucher-service .
#   docker run -p 3000:3000 -v voucher-data:/data -e ADMIN_PASSWORD=... voucher-service
#
# Stages: `build` compiles TypeScript with the dev dependencies; `deps` installs the production
# dependencies (better-sqlite3 is a native module: the build tools are there in case no prebuilt
# binary fits); `runtime` gets dist/ and node_modules from them, and nothing else.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
COPY docs/api-reference.md ./docs/api-reference.md
RUN npm run build

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root package.json ./
# the code belongs to root and is read-only to the service; only /data is the service's
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# liveness: GET /healthz answers 200 while the process serves (readiness is GET /readyz)
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM: the service stops accepting, finishes requests in flight, closes its stores, exits 0
STOPSIGNAL SIGTERM
# one garbage-collection helper thread instead of four: on a small machine four flood the cores (decision 081)
CMD ["node", "--v8-pool-size=1", "dist/src/main.js"]
