/**
 * The development surfaces answer only clients on this machine while they run by default: the
 * sandbox's payment and consent pages (PAYMENTS=sandbox without PAYMENTS_SANDBOX_PUBLIC=1: they
 * credit any balance for the public test card) and the demo provider's endpoints
 * (DEMO_PROVIDER=auto: they sell nothing real). The listener binds loopback in that configuration
 * already (LISTEN_HOST); this refusal also holds behind a reverse proxy on the same machine, where
 * the client is the address a trusted proxy names (edge/client-ip.ts), not the proxy's socket.
 */
import { ApiError } from '../errors'
import { isLoopbackAddress } from './client-ip'

export type LocalSurface = 'sandbox' | 'demo'

const WHO: Record<LocalSurface, string> = {
  sandbox: 'clients on this machine (sandbox payments; the operator opens them with PAYMENTS_SANDBOX_PUBLIC=1)',
  demo: 'clients on this machine (the demo provider; the operator opens it with DEMO_PROVIDER=on)',
}

/** The settings (src/config.ts) that decide which surfaces are local-only. */
export interface SurfaceSettings {
  PAYMENTS: string
  PAYMENTS_SANDBOX_PUBLIC: string
  DEMO_PROVIDER: string
}

function localOnly(cfg: SurfaceSettings, surface: LocalSurface): boolean {
  if (surface === 'demo') return cfg.DEMO_PROVIDER === 'auto'
  return cfg.PAYMENTS === 'sandbox' && cfg.PAYMENTS_SANDBOX_PUBLIC !== '1'
}

/** Throws FORBIDDEN when `surface` is local-only and the client is elsewhere. */
export function refuseRemoteClient(cfg: SurfaceSettings, surface: LocalSurface, client: string): void {
  if (localOnly(cfg, surface) && !isLoopbackAddress(client)) throw new ApiError('FORBIDDEN', { role: WHO[surface] })
}
