import { randomUUID } from 'node:crypto';
import type { ResolvedConfig } from '../../config/schema.js';
import type { ALERT_EVENTS } from '../../config/sections/operations.js';
import type { Logger } from '../../kernel/Logger.js';
import { FAMILY_LISTED } from '../../kernel/ownerListings.js';
import type { Storage, TxWrite } from '../../kernel/Storage.js';
import type { Metrics } from '../../observability/Metrics.js';
import { ALERT_SIGNATURE_HEADER, signAlert } from './signAlert.js';

export type AlertEvent = (typeof ALERT_EVENTS)[number];

/** One delivery of one event to one receiver, as kept in the store until it succeeds or dies. */
interface OutboxRecord {
  /** Idempotency key: the same on every attempt, from every instance. */
  id: string;
  event: AlertEvent;
  url: string;
  /** Index of the receiver in `alerts.webhooks` (absent in records written before it was kept). */
  receiver?: number;
  body: string;
  attempts: number;
  /** Epoch ms of the next attempt. */
  nextAt: number;
  /** An instance delivering it holds it until this epoch ms (others skip it meanwhile). */
  leaseUntil: number;
  lastError?: string;
  /** Epoch ms it moved to the dead-letter list (absent on dead letters written before it was kept: oldest). */
  diedAt?: number;
}

/** One delivery as operators see it (AlertOutbox.deliveries). */
export interface AlertDelivery {
  /** `<event id>:<receiver index>`: what admin.retryAlert takes. */
  deliveryId: string;
  eventId: string;
  event: AlertEvent;
  state: 'pending' | 'dead';
  /** The receiver's origin (scheme, host, port), never its path or query. */
  receiver: string;
  attempts: number;
  createdAt: string;
  /** When the next attempt is due (pending only). */
  nextAt: string | null;
  lastError: string | null;
}

function deliveryView(deliveryId: string, r: OutboxRecord, state: AlertDelivery['state']): AlertDelivery {
  let createdAt = '';
  try {
    createdAt = String((JSON.parse(r.body) as { createdAt?: unknown }).createdAt ?? '');
  } catch {
    // a body we did not write: no creation time
  }
  let receiver = '';
  try {
    receiver = new URL(r.url).origin;
  } catch {
    receiver = '(invalid URL)';
  }
  return {
    deliveryId,
    eventId: r.id,
    event: r.event,
    state,
    receiver,
    attempts: r.attempts,
    createdAt,
    nextAt: state === 'pending' ? new Date(r.nextAt).toISOString() : null,
    lastError: r.lastError ?? null,
  };
}

/** How far past a retry's due time its timer fires (timers can fire slightly early by Date.now()). */
const RETRY_MARGIN_MS = 5;
const OUTBOX = FAMILY_LISTED.alertOutbox;
const DEAD = FAMILY_LISTED.alertDead;
/** How many dead letters were dropped over `alerts.maxDeadLetters`, ever (a counter; outside DEAD's range). */
const DEAD_DROPPED = 'alerts:deaddropped';
/** Due records one scan delivers at most (the next poll takes the rest). */
const SCAN_BATCH = 256;

/**
 * Signed outbound webhooks for operator events (token low, fallback to BYOK, one-time balance
 * consumed, provider degraded, budget threshold reached, call refused for budget). An event is
 * written to an outbox in the store before any attempt, one record per receiver, so it survives a
 * crash or restart; every instance scans the outbox and
 * delivers due records, claiming each with compare-and-set. Retries back off exponentially with
 * jitter; after `alerts.maxAttempts` a record moves to the dead-letter list. Each request carries
 * `Idempotency-Key` (the same on every attempt) and an HMAC signature over timestamp and body.
 */
export class AlertOutbox {
  private timer: ReturnType<typeof setInterval> | undefined;
  private scanning: Promise<void> | undefined;
  /** Whether this instance's first scan listed the outbox (records written without a due time). */
  private listedOnce = false;
  private readonly settings: ResolvedConfig['alerts'];

  constructor(
    private readonly storage: Storage,
    config: ResolvedConfig,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {
    this.settings = config.alerts;
  }

  get enabled(): boolean {
    return this.settings.webhooks.length > 0;
  }

  /** Record an event for every receiver that wants it (resolves once it is in the store). */
  async enqueue(event: AlertEvent, data: Record<string, unknown>): Promise<string | undefined> {
    if (!this.enabled) return undefined;
    const id = randomUUID();
    const writes = this.writesFor(event, data, id);
    await this.storage.transact([], () => ({ writes, result: undefined }));
    void this.scan();
    return id;
  }

  /**
   * The outbox records of an event as transaction writes, for a caller that records the event in
   * the same transaction as what caused it (budget alerts: the charge and its alert commit
   * together, so a crash can neither lose the alert nor send it twice). `id` is the idempotency
   * key receivers see. Empty when no receiver wants the event. Call `kick()` after the commit.
   */
  writesFor(event: AlertEvent, data: Record<string, unknown>, id: string): TxWrite[] {
    const now = Date.now();
    const body = JSON.stringify({ id, event, createdAt: new Date(now).toISOString(), data });
    return this.settings.webhooks.flatMap((w, i) =>
      !w.events || w.events.includes(event)
        ? [
            {
              op: 'set' as const,
              key: `${OUTBOX}${id}:${i}`,
              value: { id, event, url: w.url, receiver: i, body, attempts: 0, nextAt: now, leaseUntil: 0 } satisfies OutboxRecord,
              dueAt: now,
            },
          ]
        : [],
    );
  }

  /** Deliver what was just committed without waiting for the next poll. */
  kick(): void {
    if (this.enabled) void this.scan();
  }

  start(): void {
    if (!this.enabled || this.timer) return;
    this.timer = setInterval(() => void this.scan(), this.settings.pollIntervalMs);
    this.timer.unref();
    void this.scan();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.scanning?.catch(() => undefined);
  }

  /** Deliver every due record once (one scan at a time per instance). */
  scan(): Promise<void> {
    this.scanning ??= this.deliverDue()
      .catch((err) => this.logger.warn('alerts: outbox scan failed', { error: err instanceof Error ? err.message : String(err) }))
      .finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  /**
   * Every record is written with its due time (`dueAt`: when it is next due, or when a claim's
   * lease ends), so a scan reads the due ones from the store's due index (`dueKeys`), never a
   * listing of the outbox: its cost does not grow with what waits or died. Only the first scan of
   * an instance also lists the outbox once, for records an older release wrote without a due time.
   */
  private async deliverDue(): Promise<void> {
    const now = Date.now();
    const due = await this.storage.dueKeys(OUTBOX, now, SCAN_BATCH);
    if (!this.listedOnce) {
      this.listedOnce = true;
      due.push(...(await this.storage.keys(OUTBOX)).filter((k) => !due.includes(k)));
    }
    for (const key of due) {
      const rec = await this.storage.get<OutboxRecord>(key);
      if (!rec || rec.nextAt > now || rec.leaseUntil > now) continue;
      // The lease outlives one attempt; if this instance dies mid-attempt, another takes over after it (due again then).
      const claimed: OutboxRecord = { ...rec, leaseUntil: now + 2 * this.settings.timeoutMs };
      if (!(await this.writeIf(key, rec, claimed, claimed.leaseUntil))) continue; // another instance has it
      await this.attempt(key, claimed);
    }
  }

  /** Replace `key`'s record when it is still `expected` (same attempt, due time and lease), listing it due at `dueAt`. */
  private writeIf(key: string, expected: OutboxRecord, next: OutboxRecord, dueAt: number): Promise<boolean> {
    return this.storage.transact([key], (read) => {
      const cur = read<OutboxRecord>(key);
      const same =
        cur !== undefined && cur.attempts === expected.attempts && cur.nextAt === expected.nextAt && cur.leaseUntil === expected.leaseUntil;
      return { writes: same ? [{ op: 'set', key, value: next, dueAt }] : [], result: same };
    });
  }

  private async attempt(key: string, rec: OutboxRecord): Promise<void> {
    // The receiver it was written for: two receivers may share a URL with different secrets
    // (and event lists), so the URL alone may name the wrong one. Config changed since: by URL.
    const own = rec.receiver === undefined ? undefined : this.settings.webhooks[rec.receiver];
    const secret = (own?.url === rec.url ? own : this.settings.webhooks.find((w) => w.url === rec.url))?.secret;
    let error: string | undefined;
    if (!secret) error = 'receiver no longer configured';
    else {
      try {
        const res = await fetch(rec.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': rec.id,
            'x-ai-backend-event': rec.event,
            [ALERT_SIGNATURE_HEADER]: signAlert(secret, rec.body, Math.floor(Date.now() / 1000)),
          },
          body: rec.body,
          redirect: 'manual',
          signal: AbortSignal.timeout(this.settings.timeoutMs),
        });
        await res.body?.cancel().catch(() => undefined);
        if (res.status >= 200 && res.status < 300) {
          await this.storage.delete(key);
          this.metrics?.alert(rec.event, 'delivered');
          return;
        }
        error = `HTTP ${res.status}`;
      } catch (err) {
        error = err instanceof Error ? err.name : 'network error';
      }
    }
    const attempts = rec.attempts + 1;
    if (attempts >= this.settings.maxAttempts || !secret) {
      await this.storage.set(`${DEAD}${key.slice(OUTBOX.length)}`, {
        ...rec,
        attempts,
        lastError: error,
        leaseUntil: 0,
        diedAt: Date.now(),
      });
      await this.storage.delete(key);
      this.metrics?.alert(rec.event, 'dead');
      this.logger.warn('alerts: delivery abandoned', { event: rec.event, id: rec.id, attempts, error });
      await this.trimDead();
      return;
    }
    const backoff = Math.min(this.settings.retryMaxMs, this.settings.retryBaseMs * 2 ** (attempts - 1));
    const delay = Math.round(backoff * (0.8 + Math.random() * 0.4));
    const nextAt = Date.now() + delay;
    const waiting: OutboxRecord = { ...rec, attempts, nextAt, leaseUntil: 0, lastError: error };
    await this.storage.transact([], () => ({ writes: [{ op: 'set', key, value: waiting, dueAt: nextAt }], result: undefined }));
    this.metrics?.alert(rec.event, 'retry');
    // Retry when it is due, not at the next poll: with the default 1 s poll a 100 ms backoff
    // would otherwise become 1 s, and every early retry the same 1 s (no backoff at all).
    // A timer may fire a millisecond before Date.now() reaches nextAt, and the scan would then
    // find the record not yet due and leave it to the poll: aim a few ms past nextAt.
    // (Not after stop(): the store may be closed by then.)
    const wait = Math.max(0, nextAt - Date.now()) + RETRY_MARGIN_MS;
    if (this.timer) setTimeout(() => this.timer && void (this.scanning ?? Promise.resolve()).then(() => this.scan()), wait).unref();
  }

  /**
   * Deliveries for operators (the console's Alerts view): waiting ones (with their attempts and
   * last error) and dead letters, newest first, at most `limit` of each. The receiver is shown by
   * its URL's origin only (a path or query may carry a token); the body is not returned.
   */
  async deliveries(limit: number): Promise<{ pending: AlertDelivery[]; dead: AlertDelivery[] }> {
    const read = async (prefix: string, state: AlertDelivery['state']) => {
      const keys = await this.storage.keys(prefix);
      const records = await this.storage.getMany<OutboxRecord>(keys);
      return records
        .flatMap((r, i) => (r ? [deliveryView(keys[i]!.slice(prefix.length), r, state)] : []))
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
        .slice(0, limit);
    };
    const [pending, dead] = await Promise.all([read(OUTBOX, 'pending'), read(DEAD, 'dead')]);
    return { pending, dead };
  }

  /**
   * Send a dead letter again: it goes back to the outbox with its attempts reset, due now, and is
   * delivered by the next scan (on any instance). False when there is no such dead letter (it was
   * retried already, or never died). A waiting record is made due now instead.
   */
  async retry(deliveryId: string): Promise<{ retried: boolean; state: 'requeued' | 'due-now' | 'unknown' }> {
    if (!/^[\w-]+:\d+$/.test(deliveryId)) return { retried: false, state: 'unknown' };
    // One transaction moves the dead letter back: two retries (or two instances) requeue it once.
    const now = Date.now();
    const requeued = await this.storage.transact([DEAD + deliveryId, OUTBOX + deliveryId], (read) => {
      const dead = read<OutboxRecord>(DEAD + deliveryId);
      if (!dead || read(OUTBOX + deliveryId)) return { writes: [], result: undefined };
      const revived: OutboxRecord = { ...dead, attempts: 0, nextAt: now, leaseUntil: 0 };
      return {
        writes: [
          { op: 'delete', key: DEAD + deliveryId },
          { op: 'set', key: OUTBOX + deliveryId, value: revived, dueAt: now },
        ],
        result: dead.event,
      };
    });
    if (requeued) {
      this.metrics?.alert(requeued, 'retry');
      this.kick();
      return { retried: true, state: 'requeued' };
    }
    const waiting = await this.storage.get<OutboxRecord>(OUTBOX + deliveryId);
    if (waiting && waiting.leaseUntil <= Date.now()) {
      const dueNow = Date.now();
      if (await this.writeIf(OUTBOX + deliveryId, waiting, { ...waiting, nextAt: dueNow }, dueNow)) {
        this.kick();
        return { retried: true, state: 'due-now' };
      }
    }
    return { retried: false, state: 'unknown' };
  }

  /**
   * The dead-letter list is bounded (`alerts.maxDeadLetters`): a receiver that stays down would
   * otherwise grow it by every alert for as long as nobody looks. Past the limit the oldest are
   * deleted, counted (`deadDropped` in `pending()`, the `dropped` outcome of the metric) and logged.
   * Two instances trimming at once may drop one too many; never more than the limit is kept.
   */
  private async trimDead(): Promise<void> {
    const keys = await this.storage.keys(DEAD);
    const over = keys.length - this.settings.maxDeadLetters;
    if (over <= 0) return;
    const records = await this.storage.getMany<OutboxRecord>(keys);
    const oldest = keys
      .map((key, i) => ({ key, rec: records[i] }))
      .sort((a, b) => (a.rec?.diedAt ?? 0) - (b.rec?.diedAt ?? 0) || (a.key < b.key ? -1 : 1))
      .slice(0, over);
    for (const { key } of oldest) await this.storage.delete(key);
    await this.storage.increment(DEAD_DROPPED, oldest.length);
    for (const { rec } of oldest) if (rec) this.metrics?.alert(rec.event, 'dropped');
    this.logger.warn('alerts: dead letters over alerts.maxDeadLetters dropped, oldest first', {
      dropped: oldest.length,
      limit: this.settings.maxDeadLetters,
    });
  }

  /** Records waiting for delivery and abandoned ones, and dead letters dropped over the limit (for operators and tests). */
  async pending(): Promise<{ outbox: number; dead: number; deadDropped: number }> {
    const [outbox, dead, dropped] = await Promise.all([
      this.storage.keys(OUTBOX),
      this.storage.keys(DEAD),
      this.storage.get<number>(DEAD_DROPPED),
    ]);
    return { outbox: outbox.length, dead: dead.length, deadDropped: dropped ?? 0 };
  }
}
