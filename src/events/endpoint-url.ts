/**
 * Which webhook URLs an owner may register: https only, to a public host. Plain http is allowed
 * for 127.0.0.1 alone and only when WEBHOOKS_ALLOW_INSECURE_LOOPBACK=1 (tests, local work).
 * Hosts written as private, loopback or link-local addresses are refused, so the service cannot be
 * pointed at its own network (a name that resolves there is the deployment's egress policy's job).
 * errors: BAD_REQUEST (field url).
 */
import { isIP } from 'node:net'
import { ApiError } from '../errors'

const EXPECTED = 'an https:// URL of a public host, without credentials, at most 2048 characters'

function privateAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h.endsWith('.localhost') || h.endsWith('.internal') || h.endsWith('.local')) return true
  const v = isIP(h)
  if (v === 4) {
    const [a, b] = h.split('.').map(Number) as [number, number]
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a >= 224
  }
  if (v === 6) return h === '::' || h === '::1' || h.startsWith('fc') || h.startsWith('fd') || h.startsWith('fe80') || h.startsWith('::ffff:')
  return false
}

export function checkEndpointUrl(raw: string, allowInsecureLoopback: boolean): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new ApiError('BAD_REQUEST', { field: 'url', expected: EXPECTED })
  }
  const loopbackOk = allowInsecureLoopback && u.protocol === 'http:' && u.hostname === '127.0.0.1'
  if (raw.length > 2048 || u.username || u.password || (u.protocol !== 'https:' && !loopbackOk) || (!loopbackOk && privateAddress(u.hostname)))
    throw new ApiError('BAD_REQUEST', { field: 'url', expected: EXPECTED })
  return u.toString()
}
