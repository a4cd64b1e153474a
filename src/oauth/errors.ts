/**
 * OAuth's own error answers (docs/mcp-oauth.md): the token, revocation and registration endpoints
 * answer RFC 6749 §5.2 / RFC 7591 §3.2.2 JSON (`{error, error_description}`), which OAuth clients
 * parse, instead of the API's `{error, message}`; the authorization endpoint puts `error` on the
 * client's redirect, or shows an HTML page when the redirect cannot be trusted.
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'unsupported_response_type'
  | 'server_error'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'unsupported_token_type'
  | 'rate_limited'

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = error === 'invalid_client' ? 401 : error === 'rate_limited' ? 429 : 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(`${error}: ${description}`)
  }

  toResponse(): Response {
    return Response.json(
      { error: this.error, error_description: this.description },
      { status: this.status, headers: { 'cache-control': 'no-store', pragma: 'no-cache', ...this.headers } },
    )
  }
}
