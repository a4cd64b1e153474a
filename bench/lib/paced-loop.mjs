// The open-loop client of bench/lib/load.ts runRate (Node, like the autocannon runs): request i is
// due at start + i / rate, whatever the answers do, and its latency is counted from that due time
// (so a server that falls behind is charged for the wait: no coordinated omission). Requests go
// over a keep-alive pool of `connections` sockets; a request due while every socket is busy waits
// for one, and that wait is in its latency too.
// Why not autocannon's `overallRate`: it gives each connection a quota per second and lets it send
// back-to-back until the quota is spent, then pauses to the next second — at 1,000 req/s over 32
// connections that is a saturating burst at the top of every second, not a rate.
//   node bench/lib/paced-loop.mjs '{"url":…,"rate":1000,"connections":32,"durationS":10,"body":…,"headers":{…}}'
// The pacing never spins: a worker thread sleeps in Atomics.wait (a futex, no CPU) until the next
// due time and wakes the main thread with a message, which sends every request due by then. The
// first version spun on setImmediate whenever the next request was under 1.5 ms away — at 1,000
// req/s always — and so kept a whole core of a 2-core machine busy, which the servers under test
// then lacked (the upstream alone showed the machine 62% busy at 1,000 req/s).
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { Worker } from 'node:worker_threads'

const o = JSON.parse(process.argv[2])
const url = new URL(o.url)
const agent = new http.Agent({ keepAlive: true, maxSockets: o.connections, maxFreeSockets: o.connections })
const body = Buffer.from(o.body)
const headers = { ...o.headers, 'content-length': String(body.length) }
const total = Math.round(o.rate * o.durationS)
const samples = []
let ok = 0
let non2xx = 0
let errors = 0
let done = 0
let sent = 0

function send(due) {
  const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method: 'POST', headers }, (res) => {
    res.on('data', () => {})
    res.on('end', () => {
      const ms = performance.now() - due
      if (res.statusCode >= 200 && res.statusCode < 300) {
        ok++
        samples.push(ms)
      } else non2xx++
      finish()
    })
  })
  req.on('error', () => {
    errors++
    finish()
  })
  req.end(body)
}

// Set once the pacer's thread is up (it takes tens of ms to start): the schedule begins 20 ms later.
let start = 0
function tick() {
  const now = performance.now()
  while (sent < total && start + (sent * 1000) / o.rate <= now) send(start + (sent++ * 1000) / o.rate)
  if (sent >= total) pacer.terminate()
}

// The pacer: the schedule's clock in its own thread. performance.timeOrigin differs per thread, so
// it is given the main thread's origin and converts. Each wake-up is a message; tick() sends
// whatever is due by then, so a late wake-up sends a burst and its lateness counts in latency.
const pacer = new Worker(
  `const { parentPort, workerData: w } = require('node:worker_threads')
  const { performance } = require('node:perf_hooks')
  const nap = new Int32Array(new SharedArrayBuffer(4))
  const now = () => performance.timeOrigin + performance.now() - w.origin
  parentPort.once('message', (start) => {
    for (let i = 0; i < w.total; i++) {
      const due = start + (i * 1000) / w.rate
      for (let wait = due - now(); wait > 0; wait = due - now()) Atomics.wait(nap, 0, 0, wait)
      parentPort.postMessage(i)
    }
  })`,
  { eval: true, workerData: { rate: o.rate, total, origin: performance.timeOrigin } },
)
pacer.once('online', () => {
  start = performance.now() + 20
  pacer.postMessage(start)
  pacer.on('message', tick)
})

let timeouts = 0
function finish() {
  if (++done < total) return
  report()
}

// A request still unanswered 10 s after the last one was due is counted as a timeout, and the run ends.
setTimeout(() => {
  timeouts = total - done
  report()
}, o.durationS * 1000 + 10_000).unref()

function report() {
  const wallS = (performance.now() - start) / 1000
  samples.sort((a, b) => a - b)
  const at = (q) => (samples.length ? samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)] : NaN)
  const round = (x) => Math.round(x * 1000) / 1000
  console.log(
    JSON.stringify({
      rate: o.rate,
      reqPerSec: ok / Math.max(o.durationS, wallS),
      p50: round(at(0.5)),
      p99: round(at(0.99)),
      p999: round(at(0.999)),
      max: round(samples[samples.length - 1] ?? NaN),
      samples: samples.length,
      ok,
      non2xx,
      errors,
      timeouts,
    }),
  )
  agent.destroy()
  process.exit(0)
}

