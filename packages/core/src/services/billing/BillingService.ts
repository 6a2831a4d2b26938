import { EventEmitter } from 'node:events';
import { CoreError } from '../../kernel/CoreError.js';
import type { Logger } from '../../kernel/Logger.js';
import type { Storage } from '../../kernel/Storage.js';
import type { Hold, HoldRequest, Metering, StoredKeyQuestion } from '../metering/Metering.js';
import type { KeyLimits } from '../apiKeys/KeyLimits.js';
import { openHold } from './CallHold.js';
import { vaultSlot, type KeyVault } from '../vault/KeyVault.js';
import type { ResolvedConfig } from '../../config/schema.js';
import { AnonymousWindow } from './AnonymousWindow.js';
import { budgetKeys, Budgets, effectiveBudget, type BudgetRecord } from './Budgets.js';
import { platformFee, withFee } from './fee.js';
import { noteUsageRecorded } from './adminAnalyticsCache.js';
import * as history from './history.js';
import { Ledger, type Account, type CreditClaimOptions } from './Ledger.js';
import { planConsumption, type ConsumptionPlan } from './planConsumption.js';
import { isStoreOutage, PendingCloses } from './PendingCloses.js';
import { PreferencesStore, preferencesKey, preferencesOf, type UserPreferences } from './PreferencesStore.js';
import { reconcile, type ReconcileReport } from './reconcile.js';
import { recordByokUsage } from './recordByokUsage.js';
import { InFlight } from '../../lib/InFlight.js';
import { previewSpend, toNanos, type BudgetRefusal, type SpendRecord } from '../spend/periodSpend.js';
import { Reservations, type ReserveOutcome } from './Reservations.js';
import type { Identity } from '../../kernel/identity.js';
import {
  BALANCE_TYPES,
  type BalanceType,
  type BillingEventMap,
  type BudgetAlertSink,
  type ByokUsageParams,
  type CreditParams,
  type CreditResult,
  type Decision,
  type DecidedHold,
  type DecideAndReserveParams,
  type DecideParams,
  type Reservation,
  type ReserveParams,
  type SettleResult,
  type SettleUsage,
} from './types.js';

/** The billing settings BillingService reads (config.billing). */
export interface BillingOptions {
  platformFeeRate: number;
  allowAnonymousServerPaid: boolean;
  anonymousTokensPerWindow: number;
  anonymousWindowMs: number;
  reservationTtlMs: number;
  /** Budget of users without their own (config billing.defaultBudget). Default none. */
  defaultBudget?: ResolvedConfig['billing']['defaultBudget'];
}

/**
 * The refusal when nothing can pay for a call. It names both kinds of key: "API key" alone reads
 * as this server's `aib_` keys to a caller who sent one, while it means a provider's key (BYOK);
 * an `aib_` key spends its owner's platform tokens and never pays by itself.
 */
export function nothingPays(identity: Identity | null, details?: Record<string, unknown>): CoreError {
  const message = !identity
    ? 'no platform tokens for anonymous calls and no provider API key: sign in, or send your own provider key (BYOK)'
    : identity.apiKey
      ? "insufficient platform tokens and no provider API key: this ai-backend key (aib_...) spends its owner's platform tokens, so the owner needs credit, or a stored provider key (BYOK)"
      : 'insufficient platform tokens and no provider API key: get credit, or store or send your own provider key (BYOK)';
  return new CoreError('PAYMENT_REQUIRED', message, details ? { details } : {});
}

/**
 * Token metering for ai.generateText and the billing/user namespaces: decide who pays, hold
 * tokens before a call, charge usage plus fee after it, record BYOK usage, credit purchases.
 * Events for operators: `runtime.billing.events.on('tokenLow', ...)`.
 */
export class BillingService implements Metering {
  readonly ledger: Ledger;
  readonly preferences: PreferencesStore;
  /** Per-user budgets (admin.setBudget, billing.getBudget); enforced in the reservation's transaction. */
  readonly budgets: Budgets;
  readonly events = new EventEmitter<BillingEventMap>();
  private readonly reservations: Reservations;
  private readonly anonymous: AnonymousWindow;
  private sweeper: NodeJS.Timeout | undefined;
  /**
   * Preferences already read for a call, so one metered call reads them once: by the decision
   * `decide` returned (reused by `reserve`), then by the reservation (reused by `settle`). Weak
   * keys: an entry lives as long as the call holds the object, and only this process sees it.
   */
  private readonly prefsRead = new WeakMap<object, { userId: string; prefs: UserPreferences }>();
  /** Holds reserved by this process and not closed yet (released by `stop`). */
  private readonly open = new Map<string, Reservation>();
  /** Holds stop() released: the cut calls' own releases, which come after, have nothing to do. */
  private readonly releasedAtStop = new Set<string>();
  /** Settles and releases a storage outage cut off, retried until the store takes them. */
  private readonly pending: PendingCloses;
  /** Settles running now: stop waits for them before releasing what is still open (a stream's settle runs after its last byte went out). */
  private readonly settling = new InFlight();

  constructor(
    storage: Storage,
    private readonly vault: KeyVault,
    readonly options: BillingOptions,
    private readonly logger: Logger,
    /** Where anonymous server-paid windows count (hot shared state). Default: `storage`. */
    shared: Storage = storage,
    /** Where budget alerts are recorded, in the transaction that causes them (the AlertOutbox). */
    private readonly alerts?: BudgetAlertSink,
    /** API keys' own limits (tokens per minute, concurrent calls), applied by `hold`. */
    private readonly keyLimits?: KeyLimits,
    /** Called for each expired hold the sweep could not release (the hold-sweep failures metric). */
    onSweepFailure?: () => void,
  ) {
    this.pending = new PendingCloses(logger);
    this.ledger = new Ledger(storage);
    this.preferences = new PreferencesStore(storage);
    const defaults = options.defaultBudget ?? {};
    this.budgets = new Budgets(storage, defaults);
    this.reservations = new Reservations(
      this.ledger,
      logger,
      options.reservationTtlMs,
      { defaults, alerts },
      { onFailure: onSweepFailure, logged: new Set() },
    );
    this.anonymous = new AnonymousWindow(shared, {
      tokensPerWindow: options.anonymousTokensPerWindow,
      windowMs: options.anonymousWindowMs,
    });
  }

  /** Tokens plus platform fee. */
  withFee(tokens: number): number {
    return withFee(tokens, this.options.platformFeeRate);
  }

  /** Platform balance types in the user's order (types the order leaves out come last). */
  private platformOrder(prefs: UserPreferences): BalanceType[] {
    const listed = prefs.consumptionOrder.filter((s): s is BalanceType => s !== 'byok');
    return [...listed, ...BALANCE_TYPES.filter((t) => !listed.includes(t))];
  }

  /**
   * Who would pay for a call, without holding anything. `budget`:
   * - `{ worstCostUsd }` (the previews): the user's budget is read and checked with periodSpend's
   *   rule, the one the reservation enforces; `null` cost: the model has no price.
   * - `{ refused }` (decide after the reservation refused): the reservation's own refusal.
   * - absent: the budget is left to the reservation.
   */
  async plan(
    userId: string,
    estimatedTokens: number,
    opts: { hasApiKey: boolean; provider?: string | undefined; budget?: { worstCostUsd: number | null } | { refused: BudgetRefusal } },
  ): Promise<ConsumptionPlan> {
    // One round trip: all reads in parallel (this runs before every metered call).
    const wanted = opts.budget;
    const [prefs, balances, byokKeys, budget] = await Promise.all([
      this.preferences.get(userId),
      this.ledger.balances(userId),
      opts.provider ? this.vault.has(userId, opts.provider).then((has) => (has ? [opts.provider!] : [])) : this.vault.providers(userId),
      wanted === undefined
        ? null
        : 'refused' in wanted
          ? wanted.refused
          : this.previewBudget(userId, {
              tokens: estimatedTokens,
              usdNanos: wanted.worstCostUsd === null ? null : toNanos(wanted.worstCostUsd),
            }),
    ]);
    return planConsumption({
      prefs,
      balances,
      needed: this.withFee(estimatedTokens),
      hasApiKey: opts.hasApiKey,
      byokKeys,
      provider: opts.provider,
      budget,
    });
  }

  /** What the reservation's budget check would answer now (the same pure rule, nothing held). */
  private async previewBudget(userId: string, worst: { tokens: number; usdNanos: number | null }): Promise<BudgetRefusal | null> {
    const [record, stored] = await this.ledger.storage.getMany<unknown>([budgetKeys.budget(userId), budgetKeys.spend(userId)]);
    const budget = effectiveBudget(record as BudgetRecord | undefined, this.options.defaultBudget ?? {});
    return previewSpend(stored as SpendRecord | undefined, budget, worst, new Date());
  }

  /**
   * Who pays for a call. Throws PAYMENT_REQUIRED when neither tokens nor a key can.
   * With `budgetRefusal` (the reservation refused a platform-paid call for the budget), decides
   * again under that refusal: the user's stored key when their order allows it, else the refusal.
   */
  async decide(p: DecideParams): Promise<Decision> {
    if (p.apiKeyProvided) return { mode: 'byok' };
    if (!p.identity) {
      if (!this.options.allowAnonymousServerPaid) {
        throw nothingPays(null);
      }
      if ((await this.anonymous.remaining(p.ip ?? 'unknown')) < this.withFee(p.estimatedTokens)) {
        throw new CoreError('PAYMENT_REQUIRED', 'anonymous token budget for this window is used up: sign in or provide an API key');
      }
      return { mode: 'platform' };
    }
    const userId = p.identity.sub;
    const refused = p.budgetRefusal as BudgetRefusal | undefined;
    const planFor = (provider: string) =>
      this.plan(userId, p.estimatedTokens, { hasApiKey: false, provider, ...(refused ? { budget: { refused } } : {}) });
    let plan = await planFor(p.provider);
    let keyProvider = p.provider;
    // No stored key pays for the provider: one of the call's others (a route's) may (one more read each, this path only).
    for (const other of plan.payer === 'byok' ? [] : (p.alsoByok ?? [])) {
      const alt = await planFor(other);
      if (alt.payer !== 'byok') continue;
      [plan, keyProvider] = [alt, other];
      break;
    }
    if (plan.payer === 'platform') {
      const decision: Decision = { mode: 'platform' };
      this.prefsRead.set(decision, { userId, prefs: plan.prefs });
      return decision;
    }
    const apiKey = await this.storedKeyPays(plan, p.identity, keyProvider, p.estimatedTokens, refused);
    return { mode: 'byok', apiKey, ...(keyProvider !== p.provider ? { keyProvider } : {}) };
  }

  /**
   * Whether `decide` would pay this signed-in call with the caller's stored key for its
   * provider: the same plan (preferences, balances, the key's slot: one round trip), nothing held.
   */
  async storedKeyWouldPay(q: StoredKeyQuestion): Promise<boolean> {
    const plan = await this.plan(q.identity.sub, q.estimatedTokens, { hasApiKey: false, provider: q.provider });
    return plan.payer === 'byok';
  }

  /** A plan whose payer is not the platform: the stored key that pays (and its fallback event), else the refusal. */
  private async storedKeyPays(
    plan: ConsumptionPlan,
    identity: Identity,
    provider: string,
    estimatedTokens: number,
    refused?: BudgetRefusal,
    /** The key's row as the decision read it (decideAndReserve): revealed without reading it again. */
    stored?: { row: unknown },
  ): Promise<string> {
    const userId = identity.sub;
    if (plan.payer === 'byok') {
      const apiKey = stored ? await this.vault.revealStored(userId, provider, stored.row) : await this.vault.reveal(userId, provider);
      if (apiKey === undefined) {
        if (refused) this.refuseForBudget(userId, refused, false);
        throw nothingPays(identity);
      }
      if (plan.fallback && plan.prefs.notifyFallbackToByok) {
        this.emit('fallbackToByok', { userId, provider, estimatedTokens, reason: plan.platformRefusedBy ?? 'balance' });
      }
      return apiKey;
    }
    if (refused && plan.platformRefusedBy === 'budget') this.refuseForBudget(userId, refused, false);
    throw nothingPays(identity, { required: plan.totalTokensNeeded, available: plan.balances.subscription + plan.balances.one_time });
  }

  /**
   * `decide` and `reserve` of a signed-in user's call in ONE storage transaction (one round trip
   * on a warm PostgreSQL or Redis store instead of a read and a transaction): the preferences and
   * the stored key's slot are read with the account, the same rule (planConsumption) picks the
   * payer, and when it is the platform (and `platformAllowed`) the hold is drawn in that same
   * transaction. Answers the reservation, or the stored key that pays, or `{ mode: 'platform' }`
   * without a reservation when the platform was chosen but this call may not use it (nothing is
   * held). Throws as `decide` (nothing pays) and `reserve` (the budget, with its details) do.
   */
  async decideAndReserve(p: DecideAndReserveParams): Promise<DecidedHold> {
    if (!Number.isSafeInteger(p.tokens) || p.tokens < 0) throw new CoreError('INVALID_PARAMS', 'tokens must be a non-negative integer');
    const tokens = this.withFee(p.tokens);
    const userId = p.identity.sub;
    const prefsKey = preferencesKey(userId);
    // The provider's stored key's slot, then those of the call's others (a route's) whose key may pay instead.
    const candidates = [p.provider, ...(p.alsoByok ?? [])];
    const slots = candidates.map((provider) => vaultSlot(userId, provider));
    // The plan may run more than once (a guess that did not hold): the run whose result is used is the last.
    let chosen: UserPreferences | undefined;
    let stored: { row: unknown } | undefined;
    let keyProvider = p.provider;
    const worst = { tokens: p.tokens, usdNanos: p.costUsd === undefined ? null : toNanos(p.costUsd) };
    const outcome = await this.unanswered(userId, p.requestId, () =>
      this.reservations.decideAndReserve<ConsumptionPlan>(
        userId,
        tokens,
        p.requestId,
        {
          keys: [prefsKey, ...slots],
          choose: (read, account) => {
            const prefs = preferencesOf(read<Partial<UserPreferences>>(prefsKey));
            chosen = prefs;
            const planFor = (i: number) => {
              const row = read(slots[i]!);
              const plan = planConsumption({
                prefs,
                balances: { subscription: account.subscription, one_time: account.one_time },
                needed: tokens,
                hasApiKey: false,
                byokKeys: row !== undefined ? [candidates[i]!] : [],
                provider: candidates[i]!,
              });
              return { plan, row, provider: candidates[i]! };
            };
            let pick = planFor(0);
            for (let i = 1; i < candidates.length && pick.plan.payer !== 'byok'; i++) {
              const alt = planFor(i);
              if (alt.plan.payer === 'byok') pick = alt;
            }
            stored = { row: pick.row };
            keyProvider = pick.provider;
            const plan = pick.plan;
            return plan.payer === 'platform' && p.platformAllowed ? { order: this.platformOrder(prefs) } : { decided: plan };
          },
        },
        worst,
        p.identity.apiKey?.id,
      ),
    );
    if ('decided' in outcome) {
      if (outcome.decided.payer === 'platform') return { mode: 'platform' };
      const apiKey = await this.storedKeyPays(outcome.decided, p.identity, keyProvider, p.tokens, undefined, stored);
      return { mode: 'byok', apiKey, ...(keyProvider !== p.provider ? { keyProvider } : {}) };
    }
    // A replay of a reservation answers before the decision is read.
    return { mode: 'platform', reservation: this.held(userId, outcome, chosen ?? (await this.preferences.get(userId))) };
  }

  /**
   * The one entry of a metered call before it runs (Metering.hold): decide who pays, apply the
   * API key's limits, reserve, re-decide once on a budget refusal. Close the Hold it returns
   * with `settle` or `release`.
   */
  hold(req: HoldRequest): Promise<Hold> {
    return openHold(this, this.keyLimits, this.logger, req);
  }

  /** Hold the call's worst case (tokens plus fee) before it runs. Atomic across instances. */
  async reserve(p: ReserveParams): Promise<Reservation> {
    if (!Number.isSafeInteger(p.tokens) || p.tokens < 0) throw new CoreError('INVALID_PARAMS', 'tokens must be a non-negative integer');
    const tokens = this.withFee(p.tokens);
    if (!p.identity) {
      if (!this.options.allowAnonymousServerPaid) throw nothingPays(null);
      return this.anonymous.reserve(p.ip ?? 'unknown', tokens, p.requestId);
    }
    const userId = p.identity.sub;
    const known = p.decision && this.prefsRead.get(p.decision);
    const prefs = known?.userId === userId ? known.prefs : await this.preferences.get(userId);
    const worst = { tokens: p.tokens, usdNanos: p.costUsd === undefined ? null : toNanos(p.costUsd) };
    const outcome = await this.unanswered(userId, p.requestId, () =>
      this.reservations.reserve(userId, tokens, p.requestId, this.platformOrder(prefs), worst, p.identity!.apiKey?.id),
    );
    return this.held(userId, outcome, prefs);
  }

  /**
   * A reservation the store did not answer (UNAVAILABLE: down, or a command that timed out) may
   * still have been applied: a hung Redis runs the script once it wakes. The call fails (503) and
   * never runs, so whatever the store did is released, queued until the store takes it
   * (PendingCloses; releasing a hold that does not exist changes nothing). Otherwise a user's
   * tokens stayed held until the hold's expiry for a call that was refused.
   */
  private async unanswered<T>(userId: string, requestId: string, reserve: () => Promise<T>): Promise<T> {
    try {
      return await reserve();
    } catch (err) {
      if (isStoreOutage(err)) {
        const stub = { userId, requestId } as Reservation;
        // Released whatever its expiry (its API key's spend read from the store); when the store has
        // not applied it yet, the request id is closed so that it never will (releaseUnanswered).
        this.pending.add(`${userId}\n${requestId}`, 'release', requestId, () =>
          this.reservations.releaseUnanswered(stub, 'the reservation was not answered'),
        );
      }
      throw err;
    }
  }

  /** A reservation's outcome: the hold, remembered with the preferences its settle uses; or the budget's refusal, thrown. */
  private held(userId: string, outcome: ReserveOutcome, prefs: UserPreferences): Reservation {
    if ('refused' in outcome) return this.refuseForBudget(userId, outcome.refused, outcome.alerted);
    const reservation = outcome.held;
    this.prefsRead.set(reservation, { userId, prefs });
    this.open.set(`${userId}\n${reservation.requestId}`, reservation);
    return reservation;
  }

  /**
   * Charge usage plus fee; the unused hold goes back. Replays return the first result.
   * A storage outage does not fail it: the settle is queued and retried until the store takes
   * it (PendingCloses), and the result says what will be charged (`remainingBalance: null`).
   */
  settle(reservation: Reservation, usage: SettleUsage): Promise<SettleResult> {
    return this.settling.track(this.settleNow(reservation, usage));
  }

  /**
   * What settling `tokensUsed` charges when the balance covers it (every call whose hold was made
   * for its worst case): the tokens plus the platform fee. What a settle queued on a store outage
   * reports before the store takes it.
   */
  chargeFor(tokensUsed: number): SettleResult {
    const used = Math.max(0, Math.ceil(tokensUsed));
    const fee = platformFee(used, this.options.platformFeeRate);
    return { tokensUsed: used, tokensCharged: used + fee, platformFee: fee, remainingBalance: null };
  }

  private async settleNow(reservation: Reservation, usage: SettleUsage): Promise<SettleResult> {
    const rate = this.options.platformFeeRate;
    if (reservation.userId === null) return (await this.anonymous.close(reservation, usage, rate))!;
    const userId = reservation.userId;
    const key = `${userId}\n${reservation.requestId}`;
    const known = this.prefsRead.get(reservation);
    const prefsOf = () => (known?.userId === userId ? known.prefs : this.preferences.get(userId));
    try {
      // Read before any write when this process did not reserve the call (a replay, another instance).
      return await this.settleWith(reservation, usage, await prefsOf());
    } catch (err) {
      if (!isStoreOutage(err) || !this.open.has(key)) throw err;
      this.pending.add(key, 'settle', reservation.requestId, async () => this.settleWith(reservation, usage, await prefsOf()));
      return this.chargeFor(usage.tokensUsed);
    }
  }

  private async settleWith(reservation: Reservation, usage: SettleUsage, prefs: UserPreferences): Promise<SettleResult> {
    const userId = reservation.userId!;
    // Once the usage rows are written (or may be), this process's console answers read them afresh (adminAnalyticsCache.ts).
    const {
      result,
      replay,
      reservation: held,
      crossings,
      oneTimeLeft,
    } = await this.reservations
      .settle(reservation, usage, this.options.platformFeeRate, this.platformOrder(prefs))
      .finally(noteUsageRecorded);
    this.prefsRead.delete(reservation);
    this.open.delete(`${userId}\n${reservation.requestId}`);
    if (crossings.length > 0) {
      this.alerts?.kick();
      for (const c of crossings) this.emit('budgetThreshold', { userId, ...c });
    }
    // The charge is committed: a failed notification (it reads a balance) must not fail the call.
    if (!replay)
      await this.notifyAfterCharge(userId, prefs, result, held, oneTimeLeft).catch((err: unknown) =>
        this.logger.warn('billing: notifying after a charge failed', { error: String(err) }),
      );
    return result;
  }

  /**
   * How often a hold whose call still runs is renewed (CallHold): a third of `reservationTtlMs`,
   * so a call longer than the TTL (a long stream) keeps its hold on every instance.
   */
  get renewEveryMs(): number {
    return Math.max(100, Math.floor(this.options.reservationTtlMs / 3));
  }

  /** Push a running call's hold expiry back by `reservationTtlMs` (Reservations.renew). */
  async renew(reservation: Reservation): Promise<void> {
    if (reservation.userId === null) return; // an anonymous window's hold is in memory, not swept
    await this.reservations.renew(reservation);
  }

  /**
   * Give the whole hold back (failed or aborted call). No-op when already settled or released, or
   * when the store lost the hold (Reservations.reserve is not durable): nothing is held then.
   * A storage outage does not fail it: the release is queued and retried (PendingCloses).
   */
  async release(reservation: Reservation, reason: string): Promise<void> {
    if (reservation.userId === null) {
      await this.anonymous.close(reservation, null, this.options.platformFeeRate);
      return;
    }
    const key = `${reservation.userId}\n${reservation.requestId}`;
    // Checked before any storage access: the storage may already be closed by then.
    if (this.releasedAtStop.has(key)) return;
    const run = async () => {
      await this.reservations.release(reservation, reason);
      this.prefsRead.delete(reservation);
      this.open.delete(key);
    };
    try {
      await run();
    } catch (err) {
      if (!isStoreOutage(err) || !this.open.has(key)) throw err;
      this.pending.add(key, 'release', reservation.requestId, run);
    }
  }

  /** A call paid with the caller's own key: usage only, no balance changes. Idempotent per requestId. */
  async recordByokUsage(p: ByokUsageParams): Promise<void> {
    if (!p.identity) return;
    await recordByokUsage(this.ledger, p.identity.sub, { ...p, apiKeyId: p.identity.apiKey?.id }).finally(noteUsageRecorded);
  }

  /** Add tokens once per idempotency key (purchases, admin credits, your own code). */
  credit(p: CreditParams, claim?: CreditClaimOptions): Promise<CreditResult> {
    return this.ledger.credit(p, claim);
  }

  balances(userId: string) {
    return this.ledger.balances(userId);
  }

  /** Balances and lifetime totals (one maintained row). */
  account(userId: string): Promise<Account> {
    return this.ledger.account(userId);
  }

  /** Credits, newest first, paged. */
  purchaseHistory(userId: string, opts: history.PageOptions & { type: 'all' | BalanceType }) {
    return history.purchases(this.ledger.storage, userId, opts);
  }

  /** Finished calls (platform and BYOK), newest first, paged. */
  usageHistory(userId: string, opts: history.PageOptions) {
    return history.usage(this.ledger.storage, userId, opts);
  }

  /** What paid for each call, newest first, paged. */
  consumptionHistory(userId: string, opts: history.PageOptions) {
    return history.consumption(this.ledger.storage, userId, opts);
  }

  /** Usage totals per day, provider and model, from maintained day rows. */
  usageAnalytics(userId: string, opts: { days: number; includeHistory: boolean; historyLimit: number }) {
    return history.analytics(this.ledger.storage, userId, opts);
  }

  /** Compare balances with the ledger sums (see docs/billing.md). */
  reconcile(userId: string): Promise<ReconcileReport> {
    return reconcile(this.ledger, userId);
  }

  /** Release holds past reservationTtlMs now; `start()` does this every minute. */
  async sweepExpiredReservations(now?: number): Promise<number> {
    // Calls this process owes a settle are charged, not released for free: try those first and
    // leave whatever still waits for the store to its queue.
    await this.pending.flush();
    return this.reservations.sweepExpired(now, (userId, requestId) => this.pending.has(`${userId}\n${requestId}`));
  }

  /** Settles and releases waiting for the store (see PendingCloses). */
  pendingCloses(): number {
    return this.pending.size;
  }

  start(intervalMs = 60_000): void {
    this.sweeper ??= setInterval(() => {
      this.sweepExpiredReservations().catch((err) => this.logger.warn('billing: sweep failed', { error: String(err) }));
    }, intervalMs).unref();
  }

  /**
   * Stop the sweeper and release every hold this process still has open (calls cut by a
   * shutdown), so no tokens stay held until expiry. Runs before the storage closes.
   */
  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    // Settles still running (a stream's, after its last byte) close their holds first.
    await this.settling.settled();
    // Settles owed for answered calls go first; what the store still refuses expires like a crashed server's holds.
    await this.pending.flush();
    const open = [...this.open.values()].filter((r) => !this.pending.has(`${r.userId}\n${r.requestId}`));
    this.pending.stop();
    for (const key of this.open.keys()) this.releasedAtStop.add(key);
    this.open.clear();
    await Promise.all(
      open.map((r) =>
        this.reservations
          .release(r, 'server stopping')
          .catch((err) => this.logger.warn('billing: could not release a hold at stop', { requestId: r.requestId, error: String(err) })),
      ),
    );
  }

  /** Holds this process reserved that are not settled or released yet. */
  openHolds(): number {
    return this.open.size;
  }

  /** `oneTimeLeft`: the one-time balance the settle's own transaction left (no read after the charge). */
  private async notifyAfterCharge(
    userId: string,
    prefs: UserPreferences,
    result: SettleResult,
    reservation: Reservation,
    oneTimeLeft: number | undefined,
  ): Promise<void> {
    const after = result.remainingBalance ?? 0;
    const threshold = prefs.notifyTokenLowThreshold;
    if (threshold > 0 && after < threshold && after + result.tokensCharged >= threshold) {
      this.emit('tokenLow', { userId, balance: after, threshold });
    }
    if (prefs.notifyOneTimeConsumed && reservation.draws.some((d) => d.type === 'one_time')) {
      if ((oneTimeLeft ?? (await this.ledger.balance(userId, 'one_time'))) === 0) this.emit('oneTimeConsumed', { userId });
    }
  }

  /** Throw the refusal of a call for its budget (its alert, when this refusal recorded one, was written with it). */
  private refuseForBudget(userId: string, r: BudgetRefusal, alerted: boolean): never {
    if (alerted) {
      this.alerts?.kick();
      this.emit('budgetExceeded', { userId, ...r });
    }
    const what = r.metric === 'usd' ? `${r.limit} USD` : `${r.limit} tokens`;
    const message =
      r.reason === 'model_not_priced'
        ? `your ${r.period} budget is in USD and this model has no price: its cost cannot be bounded`
        : `this call would exceed your ${r.period} budget of ${what} (resets ${r.resetsAt})`;
    throw new CoreError('PAYMENT_REQUIRED', message, { details: { ...r } });
  }

  /** A listener that throws must never break billing. */
  private emit<K extends keyof BillingEventMap>(name: K, ...args: BillingEventMap[K]): void {
    try {
      (this.events.emit as (n: string, ...a: unknown[]) => boolean)(name, ...args);
    } catch (err) {
      this.logger.warn('billing: event listener threw', { event: name, error: String(err) });
    }
  }
}
