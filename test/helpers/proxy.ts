/** Shared pieces of the proxy tests: an OpenAI/Anthropic-like catalog and raw HTTP over a socket. */
import net from 'node:net'

export const OPENAI_HOUSE_KEY = 'sk-house-openai-0123456789abcdef'

/** Providers shaped like the real ones (auth header, static headers, byok), all pointed at the fake. */
export function llmCatalog(fakeUrl: string) {
  return {
    providers: {
      // Its flat-priced route is opened on the house key explicitly (the house lane is closed by default: docs/house-lane.md).
      openai: { base_url: fakeUrl, key_env: 'OPENAI_TEST_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: 3, paths: ['/v1/'], house: { allow: ['/v1/'] } } },
      anthropic: {
        base_url: fakeUrl,
        auth: { header: 'x-api-key' },
        byok: true,
        headers: { 'anthropic-version': '2023-06-01' },
        proxy: { price: 2, paths: ['/v1/'] },
      },
    },
    capabilities: [],
  }
}

export interface RawResponse {
  status: number
  head: string
  body: any
}

/**
 * Writes one request exactly as given — request line included — to a TCP socket, so that no client
 * library gets to normalize the target first.
 */
export function rawRequest(
  baseUrl: string,
  target: string,
  headers: Record<string, string> = {},
  method = 'GET',
  body = '',
  /** Another loopback source address (127.0.0.2, …) to look like another client. */
  localAddress?: string,
): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl)
  const lines = [`${method} ${target} HTTP/1.1`, `Host: ${hostname}:${port}`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port: Number(port), host: hostname, localAddress }, () => sock.write(lines.join('\r\n') + '\r\n\r\n' + body))
    const chunks: Buffer[] = []
    sock.on('data', (c: Buffer) => chunks.push(c))
    sock.on('error', reject)
    sock.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [head = '', ...rest] = text.split('\r\n\r\n')
      const status = Number(head.split(' ')[1])
      let body: any = rest.join('\r\n\r\n')
      if (/transfer-encoding: chunked/i.test(head)) body = dechunk(body)
      try {
        body = JSON.parse(body)
      } catch {}
      resolve({ status, head, body })
    })
  })
}

function dechunk(s: string): string {
  let out = ''
  let i = 0
  for (;;) {
    const eol = s.indexOf('\r\n', i)
    if (eol === -1) return out
    const size = parseInt(s.slice(i, eol), 16)
    if (!size) return out
    out += s.slice(eol + 2, eol + 2 + size)
    i = eol + 2 + size + 2
  }
}

/** Polls until `check` holds (the refund and the activity entry land just after the bytes). */
export async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 3000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (check(v) || Date.now() > end) return v
    await Bun.sleep(20)
  }
}
