/**
 * A loopback TCP relay that a test can cut and restore, to take a real server (Postgres) away from
 * one client without stopping it for everyone else on the machine.
 */
import { createServer, connect, type Socket } from 'node:net'

export interface TcpProxy {
  port: number
  down(): void
  up(): void
  close(): Promise<void>
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  let open = true
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    if (!open) return client.destroy()
    const upstream = connect(targetPort, targetHost)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  return {
    port,
    down() {
      open = false
      for (const s of sockets) s.destroy()
    },
    up() {
      open = true
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy()
        server.close(() => r())
      }),
  }
}
