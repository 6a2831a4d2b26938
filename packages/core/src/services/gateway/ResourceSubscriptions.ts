import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { OpenedUpstream } from './openUpstream.js';
import { describe } from './upstreamFailure.js';
import type { ResourceSubscriber } from './ResourceSubscriber.js';

export interface ResourceSubscriptionsOptions {
  /** The server's configured name. */
  server: string;
  timeoutMs: number;
  logger: Logger;
  /** Cuts the connection's credentials out of an upstream's text. */
  scrub: (text: string) => string;
  /** Runs a request on the connection's open client (UpstreamConnection.run: bounded, its failures reported). */
  run: <T>(what: string, fn: (o: OpenedUpstream) => Promise<T>) => Promise<T>;
  /** The connection's open client now, if any. */
  opened: () => OpenedUpstream | undefined;
}

/**
 * Who subscribed to which of one connection's upstream resources (resources/subscribe): each URI
 * is subscribed at the upstream while anyone is, once however many subscribers it has, and again
 * on every new session (a reconnect).
 */
export class ResourceSubscriptions {
  private readonly subscribers = new Map<string, Set<ResourceSubscriber>>();

  constructor(private readonly opts: ResourceSubscriptionsOptions) {}

  /** How many URIs are subscribed at the upstream now. */
  get size(): number {
    return this.subscribers.size;
  }

  /** notifications/resources/updated from the upstream: every subscriber of the URI hears of it. */
  updated(uri: string): void {
    for (const who of this.subscribers.get(uri) ?? []) who(uri);
  }

  /** A new session (a reconnect) holds none of the subscriptions the last one had. */
  renew(opened: OpenedUpstream): void {
    for (const uri of this.subscribers.keys()) void this.upstream(opened, 'resources/subscribe', uri);
  }

  /**
   * Subscribe `who` to one of its resources: the first subscriber subscribes at the upstream,
   * which must offer subscriptions (`resources.subscribe`); updates reach every subscriber of the
   * URI. Kept across reconnects.
   */
  async subscribe(uri: string, who: ResourceSubscriber): Promise<void> {
    const held = this.subscribers.get(uri);
    if (held) {
      held.add(who);
      return;
    }
    await this.opts.run('resources/subscribe', async (o) => {
      if (!o.client.getServerCapabilities()?.resources?.subscribe)
        throw new CoreError('BAD_REQUEST', `MCP server "${this.opts.server}" offers no resource subscriptions`, {
          details: { reason: 'subscriptions_unsupported', server: this.opts.server },
        });
      await o.client.subscribeResource({ uri }, { timeout: this.opts.timeoutMs });
    });
    const now = this.subscribers.get(uri) ?? new Set();
    now.add(who);
    this.subscribers.set(uri, now);
  }

  /** `who` no longer wants updates of `uri`; its last subscriber gone, the upstream subscription ends. */
  unsubscribe(uri: string, who: ResourceSubscriber): void {
    const held = this.subscribers.get(uri);
    if (!held?.delete(who) || held.size > 0) return;
    this.subscribers.delete(uri);
    const opened = this.opts.opened();
    if (opened) void this.upstream(opened, 'resources/unsubscribe', uri);
  }

  /** Every subscription of `who` (its session ended). */
  unsubscribeAll(who: ResourceSubscriber): void {
    for (const uri of [...this.subscribers.keys()]) this.unsubscribe(uri, who);
  }

  /** Subscribe or unsubscribe at the upstream, on the side: a failure is logged (the next reconnect subscribes again). */
  private async upstream(opened: OpenedUpstream, method: 'resources/subscribe' | 'resources/unsubscribe', uri: string) {
    try {
      if (method === 'resources/subscribe') await opened.client.subscribeResource({ uri }, { timeout: this.opts.timeoutMs });
      else await opened.client.unsubscribeResource({ uri }, { timeout: this.opts.timeoutMs });
    } catch (err) {
      this.opts.logger.debug(`MCP upstream ${method} failed`, {
        server: this.opts.server,
        error: this.opts.scrub(describe(err, this.opts.timeoutMs)),
      });
    }
  }
}
