import type { Redis } from 'ioredis';
import { redisClientOptions, type RedisConnectOptions } from '../storage/redisClientOptions.js';
import type { Logger } from '../kernel/Logger.js';
import { importOptional, OPTIONAL_PACKAGES } from '../config/optionalPackages.js';
import { LocalSignals } from '../kernel/Signals.js';

export interface RedisSignalsOptions extends RedisConnectOptions {
  keyPrefix?: string;
}

/**
 * Signals through Redis pub/sub, on one channel per deployment (`<keyPrefix>signals`). A
 * subscribed connection can do nothing else, so this opens two: one publishes, one listens. While
 * Redis is down a publish is dropped (logged): signals only shorten cache lifetimes.
 */
export class RedisSignals extends LocalSignals {
  override readonly kind = 'redis' as const;
  private readonly channel: string;

  private constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    keyPrefix: string,
    private readonly logger: Logger,
  ) {
    super();
    this.channel = `${keyPrefix}signals`;
    sub.on('message', (channel: string, raw: string) => {
      if (channel !== this.channel) return;
      try {
        const { from, topic, message } = JSON.parse(raw) as { from: string; topic: string; message: string };
        if (from !== this.instanceId && typeof topic === 'string' && typeof message === 'string') this.dispatch(topic, message);
      } catch {
        // Not ours: ignore.
      }
    });
  }

  static async connect(opts: RedisSignalsOptions, logger: Logger): Promise<RedisSignals> {
    const { Redis: RedisClient } = await importOptional(
      OPTIONAL_PACKAGES.ioredis,
      'cross-instance signals over Redis',
      () => import('ioredis'),
    );
    const make = () => {
      const client = new RedisClient(redisClientOptions(opts));
      client.on('error', () => undefined); // reported through publish failures; reconnects by itself
      return client;
    };
    const signals = new RedisSignals(make(), make(), opts.keyPrefix ?? '', logger);
    await Promise.all([signals.pub.connect().catch(() => undefined), signals.sub.connect().catch(() => undefined)]);
    // ioredis re-subscribes after a reconnect on its own (autoResubscribe).
    await signals.sub
      .subscribe(signals.channel)
      .catch((err: Error) => logger.warn('signals: could not subscribe yet', { error: err.message }));
    if (signals.sub.status !== 'ready') signals.sub.once('ready', () => void signals.sub.subscribe(signals.channel).catch(() => undefined));
    return signals;
  }

  override async publish(topic: string, message: string): Promise<number> {
    this.dispatch(topic, message);
    try {
      // PUBLISH answers how many subscribed connections got it: one per instance, ours included.
      const reached = await this.pub.publish(this.channel, JSON.stringify({ from: this.instanceId, topic, message }));
      return Math.max(0, reached - (this.sub.status === 'ready' ? 1 : 0));
    } catch (err) {
      this.logger.warn('signals: could not notify other instances', { topic, error: err instanceof Error ? err.message : String(err) });
      return 0;
    }
  }

  override async close(): Promise<void> {
    await super.close();
    this.pub.disconnect();
    this.sub.disconnect();
  }
}
