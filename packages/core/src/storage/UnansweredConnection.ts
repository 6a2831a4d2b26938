/**
 * A Redis connection that is up but answers nothing: a frozen or overloaded host, a network
 * partition that drops packets without closing the socket. ioredis keeps one connection, and Redis
 * answers its commands in order, so once one command timed out every command sent after it waits
 * for the same timeout (2 s by default): a hung Redis beside the store cost each request one
 * timeout per Redis command on its path (a rate-limit count, an API key's three limits: 8 s for
 * one call that then succeeded). So the first timeout marks the connection unanswered and
 * commands fail at once until a probe (one PING at a time, sent again as soon as one fails) is
 * answered: service resumes within a round trip of Redis answering again, and a reconnect clears
 * the mark too.
 */
export class UnansweredConnection {
  private unanswered = false;

  constructor(
    /** One round trip on the connection (PING): resolves once Redis answers. */
    private readonly probe: () => Promise<unknown>,
    /** Whether probing should stop (the store closing). */
    private readonly stopped: () => boolean,
  ) {}

  get isUnanswered(): boolean {
    return this.unanswered;
  }

  /** A command failed: when it timed out, commands fail at once until Redis answers a probe. */
  failed(err: unknown): void {
    if (this.unanswered || !isCommandTimeout(err)) return;
    this.unanswered = true;
    void this.watch();
  }

  /** The connection was made again (ioredis 'ready'): it answers. */
  answered(): void {
    this.unanswered = false;
  }

  private async watch(): Promise<void> {
    while (this.unanswered && !this.stopped()) {
      try {
        await this.probe();
        this.unanswered = false;
      } catch {
        // Refused at once while disconnected (no offline queue): wait a little before the next.
        await new Promise((r) => setTimeout(r, 100).unref());
      }
    }
    this.unanswered = false;
  }
}

/** ioredis's rejection of a command that got no answer within `commandTimeout`. */
function isCommandTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === 'Command timed out';
}
