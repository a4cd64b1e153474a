/** One attempt to deliver an owner event, whatever the channel (a webhook POST, a Telegram message). */
export interface AttemptResult {
  ok: boolean
  /** HTTP status of the answer; null when none came (network error, timeout). */
  code: number | null
  error: string | null
}
