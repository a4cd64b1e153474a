/**
 * Gathers the work of one turn of the event loop into batches, one per group (a shard: one hash
 * slot, so one script on a cluster), and sends each batch as one call: what ioredis, Redis' script
 * start and the promise plumbing cost per command is then paid once per batch instead of once per
 * item (issue 17). Each item still gets its own answer, in order. A batch is capped, so one script
 * never holds Redis' single thread for long; a full batch goes at once.
 * errors: a batch whose call fails rejects each of its items with that error; an answer that is an
 * Error (an error element in a script's reply array) rejects its own item only.
 */
interface Waiting<I, R> {
  item: I
  resolve: (r: R) => void
  reject: (e: unknown) => void
}

export class TurnBatch<I, R> {
  private readonly queues = new Map<string, Waiting<I, R>[]>()
  private scheduled = false

  constructor(
    /** Sends one group's batch; answers one result (or Error) per item, in order. */
    private readonly sendBatch: (group: string, items: I[]) => Promise<(R | Error)[]>,
    private readonly max = 32,
  ) {}

  /**
   * An item added while a request is handled is on the connection before the next request is
   * handled: its batch goes from a setImmediate, which runs before the handler of any request
   * read since (test/integration/turn-batch.property.test.ts). It may run after the next request's
   * bytes were read off its socket: an idle loop sometimes lets it wait 0.5–1.7 ms (strace and a
   * scratch loop, docs/decisions.md, issue 17, fourteenth round). A caller that only needs its item
   * ordered before what this instance does next (ioredis keeps a connection's commands in the order
   * they were issued) need not wait for the round trip.
   */
  add(group: string, item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      let queue = this.queues.get(group)
      if (!queue) this.queues.set(group, (queue = []))
      queue.push({ item, resolve, reject })
      if (queue.length >= this.max) this.send(group)
      else if (!this.scheduled) {
        this.scheduled = true
        // After this turn's I/O callbacks: the items they add join this batch.
        setImmediate(() => {
          this.scheduled = false
          for (const g of [...this.queues.keys()]) this.send(g)
        })
      }
    })
  }

  private send(group: string): void {
    const batch = this.queues.get(group)
    if (!batch?.length) return
    this.queues.delete(group)
    const answered = this.sendBatch(
      group,
      batch.map((w) => w.item),
    )
    answered.then(
      (results) => {
        if (results.length !== batch.length) throw new Error(`batch of ${batch.length}: ${results.length} answers`)
        batch.forEach((w, i) => {
          const r = results[i]!
          if (r instanceof Error) w.reject(r)
          else w.resolve(r)
        })
      },
    ).catch((e: unknown) => batch.forEach((w) => w.reject(e)))
  }
}
