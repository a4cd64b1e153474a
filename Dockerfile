# Multi-stage build. The lockfile is npm's, so the dependency stage uses npm ci (production only);
# the runtime stage is Bun's image with the sources, Lua scripts and migrations, as a non-root user.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM oven/bun:1.4-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production PORT=8080
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json catalog.json ./
COPY src ./src
COPY lua ./lua
COPY drizzle ./drizzle
# Operator commands (ledger:rebuild, vault:rotate) run in the same image.
COPY scripts ./scripts
RUN mkdir -p /app/data && chown -R bun:bun /app/data
USER bun
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=2s --retries=3 \
  CMD bun -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/status').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# Configure with the env vars of CONTRACT §1; without DATABASE_URL it uses PGlite in /app/data/pg.
CMD ["bun", "run", "src/index.ts"]
