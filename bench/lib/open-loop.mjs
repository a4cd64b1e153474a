// The open-loop client of bench/lib/load.ts runRate (Node, like every other autocannon run):
// autocannon at a fixed overallRate, each 2xx's latency kept from its 'response' event (float ms)
// so the percentiles keep microseconds, which the published added-latency figures need.
//   node bench/lib/open-loop.mjs '{"url":…,"rate":1000,"connections":32,"durationS":10,"body":…,"headers":{…}}'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const autocannon = require('../../node_modules/autocannon')
const o = JSON.parse(process.argv[2])
const samples = []
const instance = autocannon(
  {
    url: o.url,
    method: 'POST',
    body: o.body,
    headers: o.headers,
    connections: o.connections,
    duration: o.durationS,
    overallRate: o.rate,
    idReplacement: !!o.idReplacement,
  },
  (err, r) => {
    if (err) {
      console.error(err)
      process.exit(1)
    }
    samples.sort((a, b) => a - b)
    const at = (q) => (samples.length ? samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)] : NaN)
    const round = (x) => Math.round(x * 1000) / 1000
    console.log(
      JSON.stringify({
        rate: o.rate,
        reqPerSec: r['2xx'] / r.duration,
        p50: round(at(0.5)),
        p99: round(at(0.99)),
        p999: round(at(0.999)),
        max: round(samples[samples.length - 1] ?? NaN),
        samples: samples.length,
        ok: r['2xx'],
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
      }),
    )
  },
)
instance.on('response', (_client, status, _bytes, ms) => {
  if (status >= 200 && status < 300) samples.push(ms)
})
