/**
 * A child process that ends when this process ends, however it ends. `kill -9` runs no handler of
 * ours, so the child cannot count on us to stop it: a POSIX shell stands between, reading a pipe
 * whose only writer is this process. The kernel closes that pipe when we exit (on -9 too); the
 * shell reads EOF, sends the command SIGTERM (Redis then writes its append-only file out) and
 * waits for it. A TERM, INT or HUP sent to the shell itself is passed on the same way.
 *
 * The shell runs in its own session, so a terminal's Ctrl-C reaches only the service, which drains
 * its work first and then stops the child itself (`stop()`): the child outlives the drain.
 */
import type { Subprocess } from 'bun'

const WATCHER = [
  'cmd=$1; shift',
  '"$cmd" "$@" </dev/null >/dev/null & pid=$!',
  'echo "$pid"',
  `trap 'kill -TERM "$pid" 2>/dev/null' TERM INT HUP`,
  'while read -r _; do :; done',
  'kill -TERM "$pid" 2>/dev/null',
  'wait "$pid"',
].join('\n')

export interface TiedChild {
  /** The command's own pid (the shell's child). */
  pid: number
  /** True while the watcher (and so, as far as we know, the command) has not exited. */
  running(): boolean
  /** Ends the pipe (the watcher stops the command and waits for it); SIGKILL both after `graceMs`. */
  stop(graceMs?: number): Promise<void>
}

async function firstLine(child: Subprocess<'pipe', 'pipe', 'inherit'>): Promise<string> {
  const reader = child.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) break
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return text.trim()
}

/** Starts `bin args...` tied to this process; its stdout is dropped, its stderr is ours. */
export async function spawnTied(bin: string, args: string[]): Promise<TiedChild> {
  const watcher = Bun.spawn(['/bin/sh', '-c', WATCHER, 'tied-child', bin, ...args], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
    detached: true,
  })
  const pid = Number(await firstLine(watcher))
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`could not start ${bin}`)
  return {
    pid,
    running: () => watcher.exitCode === null && watcher.signalCode === null,
    async stop(graceMs = 10_000) {
      if (watcher.exitCode !== null || watcher.signalCode !== null) return
      await watcher.stdin.end()
      const late = setTimeout(() => {
        for (const p of [pid, watcher.pid])
          try {
            process.kill(p, 'SIGKILL')
          } catch {}
      }, graceMs)
      await watcher.exited
      clearTimeout(late)
    },
  }
}
