import { CoreError } from '../../kernel/CoreError.js';
import type { Storage } from '../../kernel/Storage.js';
import { DEFAULT_CONSUMPTION_ORDER, type ConsumptionSource } from './types.js';

export interface ByokProviderPreference {
  enabled: boolean;
}

/** A user's consumption preferences (`prefs:<userId>`). */
export interface UserPreferences {
  /** Which balance pays first; 'byok' present means the user's own key is a fallback (or first). */
  consumptionOrder: ConsumptionSource[];
  /** Master switch for using stored BYOK keys. Default false: storing a key does not spend it. */
  byokEnabled: boolean;
  /** Per provider; a provider without an entry is enabled when a key is stored. */
  byokProviders: Record<string, ByokProviderPreference>;
  /** 'tokenLow' fires when the platform balance falls below this. Default 1000. */
  notifyTokenLowThreshold: number;
  notifyFallbackToByok: boolean;
  notifyOneTimeConsumed: boolean;
  updatedAt?: string;
}

export type PreferencesUpdate = Partial<Omit<UserPreferences, 'updatedAt'>>;

export const DEFAULT_PREFERENCES: UserPreferences = {
  consumptionOrder: [...DEFAULT_CONSUMPTION_ORDER],
  byokEnabled: false,
  byokProviders: {},
  notifyTokenLowThreshold: 1000,
  notifyFallbackToByok: true,
  notifyOneTimeConsumed: true,
};

/** A user's preferences row. */
export const preferencesKey = (userId: string) => `prefs:${userId}`;
const key = preferencesKey;

/** The stored row with the defaults filled in (what `get` returns). */
export const preferencesOf = (stored: Partial<UserPreferences> | undefined): UserPreferences => ({
  ...DEFAULT_PREFERENCES,
  ...stored,
  byokProviders: { ...stored?.byokProviders },
});

/** Per-user preferences with defaults filled in on read. */
export class PreferencesStore {
  constructor(private readonly storage: Storage) {}

  async get(userId: string): Promise<UserPreferences> {
    return preferencesOf(await this.storage.get<Partial<UserPreferences>>(key(userId)));
  }

  /**
   * Merge an update. byokProviders merges per provider. Compare-and-set in a short loop so two
   * concurrent updates of different fields both land.
   */
  async update(userId: string, update: PreferencesUpdate): Promise<UserPreferences> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const stored = await this.storage.get<Partial<UserPreferences>>(key(userId));
      const current = { ...DEFAULT_PREFERENCES, ...stored };
      const next: UserPreferences = {
        ...current,
        ...update,
        byokProviders: { ...current.byokProviders, ...update.byokProviders },
        updatedAt: new Date().toISOString(),
      };
      if (await this.storage.compareAndSet(key(userId), stored, next)) return next;
    }
    throw new CoreError('CONFLICT', 'preferences are being changed concurrently; retry');
  }
}
