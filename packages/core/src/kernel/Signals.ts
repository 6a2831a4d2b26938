import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';

export type SignalHandler = (message: string) => void;

/**
 * Cross-instance signals: small, best-effort notices that make other instances drop what they
 * cache in process (a revoked OAuth session, an administrator clearing caches). Durable state never
 * travels this way: it lives in the store, and a missed signal only means a cache lives out its
 * own short lifetime. Handlers must be idempotent: the publishing instance runs them at once, and
 * other instances when the notice arrives.
 */
export interface Signals {
  /** 'local': this process only (one instance); 'redis': every instance on the same Redis and key prefix. */
  readonly kind: 'local' | 'redis';
  /**
   * Run the topic's handlers here now and notify the other instances. Never throws. Resolves to
   * how many other instances the notice reached (0 for 'local', and while Redis is unreachable).
   */
  publish(topic: string, message: string): Promise<number>;
  /** Returns the function that unsubscribes. */
  subscribe(topic: string, handler: SignalHandler): () => void;
  close(): Promise<void>;
}

/** Signals within one process. */
export class LocalSignals implements Signals {
  readonly kind: 'local' | 'redis' = 'local';
  protected readonly events = new EventEmitter().setMaxListeners(0);
  /** Tells this instance's own notices apart from others' (Redis echoes them back). */
  protected readonly instanceId = randomUUID();

  async publish(topic: string, message: string): Promise<number> {
    this.dispatch(topic, message);
    return 0;
  }

  subscribe(topic: string, handler: SignalHandler): () => void {
    this.events.on(topic, handler);
    return () => this.events.off(topic, handler);
  }

  protected dispatch(topic: string, message: string): void {
    for (const handler of this.events.listeners(topic) as SignalHandler[]) {
      try {
        handler(message);
      } catch {
        // A failing handler must not keep the others from running.
      }
    }
  }

  async close(): Promise<void> {
    this.events.removeAllListeners();
  }
}
