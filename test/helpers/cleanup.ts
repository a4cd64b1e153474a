/**
 * Runs every cleanup step even when one fails (a failed `t.close()` must not leave a Redis cluster
 * running), then rethrows the first failure. Steps may be absent (a beforeAll that died early).
 */
export async function cleanupAll(...steps: (((() => unknown) | null | undefined | false))[]): Promise<void> {
  let first: unknown = null
  for (const step of steps) {
    if (!step) continue
    try {
      await step()
    } catch (e) {
      first ??= e
    }
  }
  if (first) throw first
}
