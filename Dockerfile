# Multi-stage build. The lockfile is npm's, so the dependency stage uses npm ci (production only);
# the runtime stage is Bun's image with the sources, Lua scripts and migrations, as a non-root user.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM oven/bun:1.4-slim AS runtime
WORKDIR /app
# A container publishes its port, so it binds every interface (LISTEN_HOST) and never runs the
# sandbox, which credits any balance for the public test card: PAYMENTS=stripe refuses to start
# until STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are set (and BASE_URL names the public URL).
# PAYMENTS=sandbox here is refused too, unless PAYMENTS_SANDBOX_PUBLIC=1 says it is meant.
ENV NODE_ENV=production PORT=8080 LISTEN_HOST=0.0.0.0 PAYMENTS=stripe
# Bun's allocator (mimalloc) keeps the memory a request frees for the next one instead of handing it
# back to the OS 100 ms later: at load each paid call faulted ~1.5 pages back in (~25% of the service's
# CPU a call, docs/decisions.md). Its resident size then stays at its peak.
ENV MIMALLOC_PURGE_DELAY=-1
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
# Configure with the env vars of the README's Configuration; without DATABASE_URL it uses PGlite in /app/data/pg.
# Exec form: the service is PID 1 and gets docker stop's SIGTERM itself (it drains, then exits).
CMD ["bun", "run", "src/index.ts"]
