import { randomUUID } from 'node:crypto';
import type { ProviderId } from '../../config/sections/ai.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { CircuitBreaker } from './CircuitBreaker.js';
import type { ProviderRegistry } from './ProviderRegistry.js';
import { validateProviderKey } from './validateProviderKey.js';

/** `ai.healthProbe`, resolved. */
export interface RegistryProbeOptions {
  /** Probe at all. Default false. */
  enabled: boolean;
  /** Time between probe rounds, in ms (also the length of one lease slot). */
  intervalMs: number;
  /** Time one probe may take before it counts as failed, in ms. */
  timeoutMs: number;
}

/** The last probe of one provider, as stored in the shared storage and reported by ai.getRegistryHealth. */
export interface ProbeResult {
  ok: boolean;
  /** Why it failed: invalid_key, unreachable, timeout, rate_limited or unexpected_status. */
  reason?: string;
  /** Upstream HTTP status, when one was received. */
  status?: number;
  latencyMs: number;
  checkedAt: string;
}

const leaseKey = (slot: number) => `aiprobe:lease:${slot}`;
const resultKey = (provider: ProviderId) => `aiprobe:result:${provider}`;

/**
 * Active registry health, shared across instances. Every instance ticks every `intervalMs`;
 * the interval is cut into slots of that length (`floor(now / intervalMs)`), and the first
 * instance to create the slot's lease key (compareAndSet on an absent key, with a TTL) probes
 * every server-paid provider once, so the providers see one probe per interval however many
 * instances run. Results go to the shared storage, where every instance's registry health reads
 * them. The prober also drives what follows from a change: a provider that turns from healthy
 * (or unknown) to failing raises `onDegraded` once per transition for the whole cluster (the
 * result is written with compareAndSet against the value it replaced) and opens the shared
 * circuit breaker; a recovery closes it.
 *
 * Only providers with a server key are probed (no caller's key is ever used for it). The probe
 * is the cheapest authenticated request each provider has (validateProviderKey: its model list,
 * OpenRouter's key record), so it costs no tokens.
 */
export class RegistryProbe {
  /** Rounds this instance ran (it won the slot's lease). */
  rounds = 0;
  /** Ticks of this instance, whether or not it won the lease. */
  ticks = 0;
  private readonly instance = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly opts: RegistryProbeOptions,
    private readonly deps: {
      storage: Storage;
      providers: ProviderRegistry;
      logger: Logger;
      breaker?: CircuitBreaker;
      onDegraded?: (provider: ProviderId, reason: string) => void;
    },
  ) {}

  get enabled(): boolean {
    return this.opts.enabled;
  }

  /** Providers probed: those the server pays for, when they have a plain check request (not Bedrock, Vertex). */
  targets(): ProviderId[] {
    return this.deps.providers.ids().filter((id) => this.deps.providers.keyCheck(id) !== undefined);
  }

  /** Start ticking (the first round now). Does nothing when disabled. */
  start(): void {
    if (!this.opts.enabled || this.timer) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
    // A probe must never keep a process alive that is otherwise done.
    this.timer.unref();
  }

  /** Stop ticking; an unfinished round is aborted and awaited. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopping.abort();
    await this.current;
  }

  /** One tick: take the slot's lease or leave the round to the instance that has it. */
  tick(): Promise<void> {
    // A round slower than the interval (timeoutMs > intervalMs) is not stacked.
    if (this.current || this.stopping.signal.aborted) return this.current ?? Promise.resolve();
    this.ticks++;
    this.current = this.round().finally(() => (this.current = undefined));
    return this.current;
  }

  private async round(): Promise<void> {
    const { storage, logger } = this.deps;
    try {
      const slot = Math.floor(Date.now() / this.opts.intervalMs);
      // Kept for two slots so a late tick of the previous slot cannot take it again.
      if (!(await storage.compareAndSet(leaseKey(slot), undefined, this.instance, { ttlMs: 2 * this.opts.intervalMs }))) return;
      this.rounds++;
      await Promise.all(this.targets().map((p) => this.probe(p)));
    } catch (err) {
      // Storage down: no round this time; the next tick tries again.
      logger.warn('ai: registry probe round failed', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  private async probe(provider: ProviderId): Promise<void> {
    const { storage, providers, logger, breaker } = this.deps;
    const check = providers.keyCheck(provider);
    if (!check) return;
    // The value this probe replaces is the one stored before its request went out, not after it
    // came back: a round that stored a result meanwhile (a newer one, while this probe hung until
    // its timeout) makes the compare-and-set below fail, so this older verdict is dropped. Read
    // after the answer, it would be the newer result and the stale verdict would replace it.
    const prev = await storage.get<ProbeResult>(resultKey(provider));
    const r = await validateProviderKey({
      provider,
      ...check,
      baseUrl: providers.baseUrl(provider),
      timeoutMs: this.opts.timeoutMs,
      signal: this.stopping.signal,
    });
    if (this.stopping.signal.aborted) return;
    const result: ProbeResult = {
      ok: r.valid,
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.status !== undefined ? { status: r.status } : {}),
      latencyMs: r.latencyMs,
      checkedAt: new Date().toISOString(),
    };
    // Kept a few rounds: when nobody probes any more (every instance stopped), old results expire.
    const written = await storage.compareAndSet(resultKey(provider), prev, result, {
      ttlMs: 3 * this.opts.intervalMs + this.opts.timeoutMs,
    });
    // Another round stored a result while this probe was out: the verdict is that round's,
    // breaker and event included. A probe that hung until its timeout can finish after a newer
    // round saw the provider recover; opening the breaker for it would keep a healthy provider
    // skipped for the whole cooldown, since no later round sees a transition that closes it.
    if (!written) return;
    // Open until the next round has decided: rounds are up to two intervals apart (the lease
    // goes to the first tick in a slot, wherever it falls) plus the probe's timeout, so a
    // cooldown shorter than that would let calls try a provider the probe still sees down.
    if (!result.ok) await breaker?.open(provider, `probe: ${result.reason}`, 2 * this.opts.intervalMs + this.opts.timeoutMs);
    if (!result.ok && (prev === undefined || prev.ok)) {
      logger.warn('ai: registry probe: provider degraded', { provider, reason: result.reason, status: result.status });
      this.deps.onDegraded?.(provider, result.reason ?? 'probe_failed');
    } else if (result.ok && prev && !prev.ok) {
      logger.info('ai: registry probe: provider healthy again', { provider });
      await breaker?.reset(provider);
    }
  }

  /** The stored results (shared by every instance); a provider never probed or expired is absent. */
  async results(): Promise<Partial<Record<ProviderId, ProbeResult>>> {
    const ids = this.targets();
    const values = await this.deps.storage.getMany<ProbeResult>(ids.map(resultKey));
    return Object.fromEntries(ids.flatMap((id, i) => (values[i] ? [[id, values[i]]] : [])));
  }
}
