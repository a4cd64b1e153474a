/**
 * Where the service's CPU went, from a `bun --cpu-prof` profile (`bun run bench --profile` writes
 * one into bench/.out/): each sample is charged to the first matching part of its stack.
 * Counts samples, not the profile's time deltas: a delta spans whatever the thread did between two
 * samples (idle included), so weighting by it inflates whatever runs right after a wait.
 *
 *   bun bench/profile-summary.ts bench/.out/paid-call-<ts>/CPU.<...>.cpuprofile
 */
export {}

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

// A sample goes to the first part that matches any frame of its stack: the flusher's and the two hot
// scripts' callers before src/paid-request/ as a whole, and our code before the libraries it calls.
const PARTS: [string, RegExp][] = [
  ['flusher: drizzle query building', /drizzle-orm/],
  ['flusher: own code (read, rows, COPY text, ack)', /src\/write-behind\/|src\/ledger\/sinks\.ts|src\/db\/copy\.ts|src\/lua\/ack-outbox\.ts/],
  ['flusher: postgres driver', /node_modules\/postgres\//],
  ['call: filing (record-calls)', /paid-request\/call-filing\.ts|paid-request\/calls\.ts|src\/lua\/record-calls\.ts/],
  ['call: debit (script wrapper, batches, keys, args)', /paid-request\/debit\.ts|src\/lua\/debit\.ts|redis\/keys\.ts|redis\/batched-scripts\.ts|redis\/turn-batch\.ts|redis\/variable-keys\.ts/],
  ['call: the paid request (open, outcome, refund, settle)', /src\/paid-request\/|src\/lua\/(settle|refund)\.ts/],
  ['call: upstream fetch', /src\/upstream\//],
  ['edge: body, text checks, auth', /src\/edge\/|src\/http\.ts|src\/auth\/|src\/admission\.ts|src\/route-access\.ts/],
  ['metrics and observers', /src\/metrics\.ts|src\/observe\.ts|prom-client|alarms\/spend\.ts/],
  ['call: handler, params, response', /modules\/call\/|src\/calls\//],
  ['ioredis (auto-pipeline writes, replies)', /ioredis|redis-parser/],
  ['elysia', /elysia/],
  ['mcp: zod (SDK schemas)', /node_modules\/zod\//],
  ['mcp: SDK (transport, protocol, server)', /@modelcontextprotocol/],
  ['mcp: endpoint, tools', /src\/mcp\/|modules\/mcp\//],
  ['proxy: metering (request, usage, meter)', /src\/metering\//],
  ['proxy: relay, headers, service', /src\/proxy\//],
]

const file = Bun.argv[2]
if (!file) {
  console.error('usage: bun bench/profile-summary.ts <file.cpuprofile>')
  process.exit(2)
}
const profile = (await Bun.file(file).json()) as { nodes: Node[]; samples: number[] }
const byId = new Map<number, Node>()
const parent = new Map<number, number>()
for (const n of profile.nodes) {
  byId.set(n.id, n)
  for (const c of n.children ?? []) parent.set(c, n.id)
}
const counts = new Map<string, number>()
for (const id of profile.samples) {
  const stack: string[] = []
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) stack.push(byId.get(cur)!.callFrame.url)
  const top = byId.get(id)!.callFrame
  const part = PARTS.find(([, re]) => stack.some((u) => re.test(u)))?.[0] ?? `other: ${top.functionName || '(native/root)'}`
  counts.set(part, (counts.get(part) ?? 0) + 1)
}
const total = profile.samples.length
console.log(`${total} samples`)
for (const [part, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 20))
  console.log(`${((n / total) * 100).toFixed(1).padStart(5)}%  ${part}`)
