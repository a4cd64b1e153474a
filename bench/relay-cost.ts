/**
 * What relaying one SSE answer costs the proxy in-process, no sockets: the bench upstream's 20-chunk
 * OpenAI stream (bench/proxy-upstream.ts: the usage option's `"usage":null` on every chunk and its
 * usage chunk for the metered rows) pushed through the flat relay (src/paid-request/relay.ts) and the
 * metered one (src/paid-request/metered-relay.ts: meter, injected-usage strip, key mask), read to the end.
 * Prints µs of CPU per stream for each, the metered relay also with a meter that passes every chunk
 * on as is (`ident`: the relay's own structure) and without a key to mask (`nokey`). The whole
 * service's CPU per request is too noisy on two shared cores to resolve a few µs; this is not.
 *
 *   bun bench/relay-cost.ts [--streams 20000] [--rounds 4] [--kinds flat,metered,ident,nokey] [--split 0]
 */
import { parseArgs } from 'node:util'
import { meterFor, type UsageMeter } from '../src/metering/meter'
import { meteredRelay } from '../src/paid-request/metered-relay'
import { relay, type ChunkReader } from '../src/paid-request/relay'
import { openaiFrames } from '../test/fakes/llm'
import { SSE_CHUNKS } from './proxy-upstream'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    streams: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '4' },
    kinds: { type: 'string', default: 'flat,metered,ident,nokey' },
    /** Re-cut each stream into chunks of this many bytes (0: one chunk per frame, as written). */
    split: { type: 'string', default: '0' },
  },
})

const enc = new TextEncoder()
const KEY = 'bench-house-key'
// The frames as bench/proxy-upstream.ts sends them (its padding, its usage chunk).
const PADS = ['ZGF', 'lRK2aBv', 'kJ', '0wmdEAC', 'Qx9', 'a1B2c3D4e']
const padded = (frames: string[], before = '') => frames.map((f, i) => f.replace('}\n\n', `${before},"obfuscation":"${PADS[i % PADS.length]}"}\n\n`))
const withNulls = padded(openaiFrames('bench-model', SSE_CHUNKS), ',"usage":null')
const [finish] = withNulls.pop()!.split('data: [DONE]')
const usage = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1700000000, model: 'bench-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: 40, total_tokens: 52 } }
const metered = [...withNulls, finish!, `data: ${JSON.stringify(usage)}\n\ndata: [DONE]\n\n`].map((f) => enc.encode(f))
const plain = padded(openaiFrames('bench-model', SSE_CHUNKS)).map((f) => enc.encode(f))

/** The chunks a socket may deliver instead of one per write: the stream cut every `n` bytes. */
function recut(chunks: Uint8Array[], n: number): Uint8Array[] {
  if (!n) return chunks
  const all = Buffer.concat(chunks)
  return Array.from({ length: Math.ceil(all.byteLength / n) }, (_, i) => new Uint8Array(all.subarray(i * n, (i + 1) * n)))
}
const SPLIT = Number(opt.split)
const meteredChunks = recut(metered, SPLIT)
const plainChunks = recut(plain, SPLIT)

/** The upstream body after its first chunk, a fresh copy of each chunk per stream (as fetch gives them). */
function upstream(chunks: Uint8Array[]): ChunkReader {
  let i = 1
  return {
    read: async () => (i < chunks.length ? { done: false as const, value: chunks[i++]!.slice() } : { done: true as const, value: undefined }),
    cancel: async () => {},
  }
}

const passThrough: UsageMeter = { push: (c) => c, flush: () => new Uint8Array(0), usage: () => null, failedBeforeOutput: () => false, inputSoFar: () => null }

function body(kind: string): ReadableStream<Uint8Array> {
  if (kind === 'flat') return relay(upstream(plainChunks), plainChunks[0]!.slice(), { cap: 2_000_000, apiKey: KEY, abortUpstream() {}, clientGone: () => false, onEnd() {} })
  const chunks = kind === 'ident' ? plainChunks : meteredChunks
  return meteredRelay(upstream(chunks), chunks[0]!.slice(), {
    cap: 2_000_000,
    apiKey: kind === 'nokey' ? '' : KEY,
    meter: kind === 'ident' ? passThrough : meterFor('chat', true, true),
    abortUpstream() {},
    clientSignal: new AbortController().signal,
    drainMs: 1000,
    onEnd() {},
  })
}

async function readAll(s: ReadableStream<Uint8Array>): Promise<number> {
  const r = s.getReader()
  let n = 0
  for (let x = await r.read(); !x.done; x = await r.read()) n += x.value.byteLength
  return n
}

const N = Number(opt.streams)
for (let round = 1; round <= Number(opt.rounds); round++)
  for (const kind of opt.kinds!.split(',')) {
    const c0 = process.cpuUsage()
    for (let i = 0; i < N; i++) await readAll(body(kind))
    const c = process.cpuUsage(c0)
    console.log(`round ${round} ${kind}: ${((c.user + c.system) / N).toFixed(1)} µs CPU a stream`)
  }
