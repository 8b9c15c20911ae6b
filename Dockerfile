# svc: one image for every instance. Build: docker build -t svc .
# Run:   docker run -p 8787:8787 -v svc-data:/data svc           (embedded SQLite store in the volume)
# Several instances on PostgreSQL: deploy/compose.yaml.

# Build stage: compile TypeScript and the native better-sqlite3 binding, then drop dev dependencies.
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 downloads a prebuilt binding; these build it from source when none fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own "prepare" (the build) needs the sources, copied below.
RUN npm ci --no-audit --no-fund --ignore-scripts && npm rebuild better-sqlite3
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY plugin ./plugin
COPY skills ./skills
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: node, the compiled code and production dependencies only; runs as the unprivileged "node" user.
FROM node:20.20.2-bookworm-slim
ENV NODE_ENV=production \
    SVC_HOST=0.0.0.0 \
    SVC_PORT=8787 \
    SVC_DATA_DIR=/data \
    SVC_LOG_FORMAT=json
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./package.json
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
COPY --from=build --chown=root:root /app/bin ./bin
COPY --from=build --chown=root:root /app/plugin ./plugin
COPY --from=build --chown=root:root /app/skills ./skills
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8787
# The load balancer's check: 200 once the store answers, migrations fit and the writer flows; 503 while draining.
# (No --start-period: dockerfilelint 1.8 does not know it; five retries 10 s apart cover a start that runs migrations.)
HEALTHCHECK --interval=10s --timeout=3s --retries=5 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.SVC_PORT || 8787) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains (SVC_SHUTDOWN_DRAIN_MS, default 5 s) before the server stops: give docker stop more than that (--time 30).
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/svc.js"]
CMD ["serve"]
