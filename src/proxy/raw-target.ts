/**
 * What the client actually sent as a proxy path, before Bun's URL parser resolved `..`, `%2e%2e`
 * or `\` in it. Bun.serve builds `request.url` with that parser, but matches its `routes` on the
 * raw request target and hands the matched segments over as (percent-decoded) `params`; the
 * listener (src/listen.ts) records them per Request:
 *   a string   the raw proxy path, each segment decoded once ("/proxy/openai/v1/../x" stays so)
 *   null       the request reached the fallback: its raw target matched no proxy route, so a
 *              /proxy/ URL here was made by normalization (or has an empty segment) — unverifiable
 *   undefined  not from the listener (app.handle in tests): the URL is all there is, and it is
 *              also exactly what would be forwarded
 */
const paths = new WeakMap<Request, string | null>()

export function rememberRawPath(request: Request, decodedPath: string | null): void {
  paths.set(request, decodedPath)
}

export function rawPathOf(request: Request): string | null | undefined {
  return paths.get(request)
}
