/** Proposals (CONTRACT §11) are not wired yet: the page says so plainly. */
export function proposalsMain(): string {
  return `<p>No proposals.</p><p class="muted"><small>When an agent asks for more room (a higher cap, a budget, an allowlist pattern, a top-up), its pending proposals are listed here with Approve / Decline.</small></p>`
}
