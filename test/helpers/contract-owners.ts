/**
 * "One owner per contract" (docs/architecture.md, "Rules the tests hold"), checked over a source tree (path → source, as readTree in
 * boundaries.ts gives it), so a test can also feed it a tree that breaks a rule:
 * - a Lua script is called only by its wrapper in src/lua/ (nothing else says `scripts.<name>(`);
 * - a script's tuple is read by position (`reply[4]`) only there too;
 * - the account hash is read only by src/redis/account-hash.ts (no `hget(keys.account(…), …)`).
 */
export const SCRIPT_OWNER = 'src/lua/'
export const ACCOUNT_HASH_OWNER = 'src/redis/account-hash.ts'

const SCRIPT_CALL = /\bscripts\??\.\s*[A-Za-z_$][\w$]*\s*\(|\bscripts\s*\[\s*['"`]/
const POSITIONAL_REPLY = /\breply\s*\[\s*\d+\s*\]/
const ACCOUNT_HASH_READ = /\.(?:hget|hmget|hgetall|hexists)\(\s*[\w.]*keys\.account\(/

/** Comments may name a script or a field freely; only code counts. */
function code(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1')
}

export function contractOwnerViolations(tree: Map<string, string>): string[] {
  const problems: string[] = []
  for (const [file, source] of tree) {
    const lines = code(source).split('\n')
    lines.forEach((line, i) => {
      const at = `${file}:${i + 1}`
      if (!file.startsWith(SCRIPT_OWNER)) {
        if (SCRIPT_CALL.test(line)) problems.push(`${at} calls a script: only its wrapper in ${SCRIPT_OWNER} may`)
        if (POSITIONAL_REPLY.test(line)) problems.push(`${at} reads a script reply by position: use the wrapper's named result`)
      }
      if (file !== ACCOUNT_HASH_OWNER && ACCOUNT_HASH_READ.test(line)) problems.push(`${at} reads the account hash: use readAccount (${ACCOUNT_HASH_OWNER})`)
    })
  }
  return problems
}
