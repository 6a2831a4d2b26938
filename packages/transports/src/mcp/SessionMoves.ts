import { randomUUID } from 'node:crypto';
import type { Signals } from '@ai-backend/core/internal';

const TOPIC = 'mcp.session';

/** What one instance tells the others about a shared 2025 session (sessionRecords). */
type Notice = { id: string; event: 'taken' | 'ended'; from: string };

export interface SessionMoveHandlers {
  /** Another instance serves the session now: it counts it, so this one stops counting its copy. */
  taken(id: string): void;
  /** Another instance ended the session (DELETE): this one's copy goes too. */
  ended(id: string): void;
}

/**
 * Sessions shared through their records move between instances with the requests a load
 * balancer spreads: each instance that serves one holds a copy. Without a word between them,
 * every copy counted against the owner's session budget (which is the cluster's), so a client
 * whose requests alternated between two instances counted each session twice, and one at its
 * budget could not move at all; and a DELETE on one instance left the others' copies open, and
 * counted, until they idled out. These notices (runtime signals: across instances with Redis,
 * otherwise within this process) keep one count per session, on the instance that served it
 * last, and end every copy with the session.
 */
export class SessionMoves {
  private readonly me = randomUUID();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly signals: Signals,
    handlers: SessionMoveHandlers,
  ) {
    this.unsubscribe = signals.subscribe(TOPIC, (message) => {
      let notice: Notice;
      try {
        notice = JSON.parse(message) as Notice;
      } catch {
        return;
      }
      if (notice.from === this.me || typeof notice.id !== 'string') return;
      if (notice.event === 'taken') handlers.taken(notice.id);
      else if (notice.event === 'ended') handlers.ended(notice.id);
    });
  }

  /** This instance counts the session now. */
  taken(id: string): void {
    this.publish({ id, event: 'taken', from: this.me });
  }

  /** The session ended here (DELETE). */
  ended(id: string): void {
    this.publish({ id, event: 'ended', from: this.me });
  }

  close(): void {
    this.unsubscribe();
  }

  private publish(notice: Notice): void {
    void this.signals.publish(TOPIC, JSON.stringify(notice));
  }
}
