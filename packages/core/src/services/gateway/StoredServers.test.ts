import { describe, expect, it } from 'vitest';
import { mcpServerSchema, type McpServerConfig } from '../../config/sections/mcpServers.js';
import { createLogger } from '../../kernel/Logger.js';
import { LocalSignals } from '../../kernel/Signals.js';
import { MemoryStorage } from '../../storage/MemoryStorage.js';
import { LateReads } from '../../storage/__tests__/LateReads.js';
import { CredentialStore } from './credentials/CredentialStore.js';
import { StoredServers } from './StoredServers.js';

const MASTER = 'stored-servers-master-key-0123456789abcdef';
const TEAM_KEY = 'Bearer sk-team-key-0123456789abcdef';
const CLIENT_SECRET = 'oauth-client-secret-0123456789';

const remote = (extra: Record<string, unknown> = {}) =>
  mcpServerSchema().parse({ type: 'http', url: 'https://mcp.example.com/mcp', ...extra }) as McpServerConfig;

function setup(opts: { masterKey?: string; storage?: MemoryStorage } = {}) {
  const storage = opts.storage ?? new MemoryStorage();
  const applied: Array<ReadonlyMap<string, McpServerConfig>> = [];
  const warnings: string[] = [];
  const sealer = new CredentialStore(storage, opts.masterKey ? { masterKey: opts.masterKey } : {});
  const stored = new StoredServers(
    storage,
    new LocalSignals(),
    undefined,
    (servers) => applied.push(servers),
    createLogger('warn', (l) => warnings.push(l)),
    sealer,
  );
  return { storage, stored, applied, warnings, last: () => applied.at(-1)! };
}

describe('StoredServers: servers added at run time keep their credentials sealed', () => {
  it('stores headers and the OAuth client secret encrypted, and serves them back whole', async () => {
    const { storage, stored, last } = setup({ masterKey: MASTER });
    const config = remote({ headers: { Authorization: TEAM_KEY }, oauth: { clientId: 'app', clientSecret: CLIENT_SECRET } });
    await stored.put('team', config);
    const raw = JSON.stringify(await storage.get('gateway:servers'));
    expect(raw).not.toContain('sk-team-key');
    expect(raw).not.toContain(CLIENT_SECRET);
    expect(raw).toContain('https://mcp.example.com/mcp');
    const served = last().get('team')!;
    expect(served).toEqual(config);
  });

  it('refuses a server with credentials when there is no vault key, and stores one without them', async () => {
    const { stored, last } = setup();
    await expect(stored.put('team', remote({ headers: { 'X-Api-Key': 'k'.repeat(20) } }))).rejects.toThrow(/billing\.vaultKey/);
    await stored.put('open', remote());
    expect([...last().keys()]).toEqual(['open']);
  });

  it('still serves a record written before sealing, and leaves out one sealed under a key it lacks', async () => {
    const { storage, stored, last } = setup({ masterKey: MASTER });
    await stored.put('sealed', remote({ headers: { Authorization: TEAM_KEY } }));
    const record = (await storage.get<{ version: string; servers: Record<string, unknown> }>('gateway:servers'))!;
    // A plaintext record as an earlier version wrote it, beside the sealed one.
    const legacy = remote({ headers: { Authorization: 'Bearer legacy-token-value' } });
    await storage.set('gateway:servers', { version: 'older', servers: { ...record.servers, legacy } });
    await stored.sync();
    expect(last().get('legacy')).toEqual(legacy);
    expect(last().get('sealed')).toEqual(remote({ headers: { Authorization: TEAM_KEY } }));

    // Another instance with another vault key: the sealed server is not served, and says why.
    const applied: Array<ReadonlyMap<string, McpServerConfig>> = [];
    const warnings: string[] = [];
    const elsewhere = new StoredServers(
      storage,
      new LocalSignals(),
      undefined,
      (servers) => applied.push(servers),
      createLogger('warn', (l) => warnings.push(l)),
      new CredentialStore(storage, { masterKey: 'another-master-key-0123456789abcdef' }),
    );
    await elsewhere.sync();
    // The legacy record was sealed by the first instance when it read it (below): neither is served here.
    expect([...applied.at(-1)!.keys()]).toEqual([]);
    expect(warnings.join('\n')).toMatch(/cannot be decrypted/);
    expect(warnings.join('\n')).not.toContain('sk-team-key');
    expect(warnings.join('\n')).not.toContain('legacy-token-value');
  });
});

describe('StoredServers: a record written before sealing is sealed in place', () => {
  const legacy = () =>
    remote({ headers: { Authorization: 'Bearer legacy-token-value' }, oauth: { clientId: 'app', clientSecret: CLIENT_SECRET } });

  it('two instances reading it at once: one seals it (compare-and-set), the other finds nothing left; both serve it whole', async () => {
    const storage = new MemoryStorage();
    const open = remote();
    await storage.set('gateway:servers', { version: 'older', servers: { legacy: legacy(), open } });
    const instances = [0, 1].map(() => {
      const applied: Array<ReadonlyMap<string, McpServerConfig>> = [];
      const logs: string[] = [];
      const stored = new StoredServers(
        storage,
        new LocalSignals(),
        undefined,
        (servers) => applied.push(servers),
        createLogger('debug', (l) => logs.push(l)),
        new CredentialStore(storage, { masterKey: MASTER }),
      );
      return { stored, applied, logs };
    });
    await Promise.all(instances.map((i) => i.stored.sync()));
    const record = (await storage.get<{ version: string; servers: Record<string, { sealed?: unknown }> }>('gateway:servers'))!;
    const raw = JSON.stringify(record);
    expect(raw).not.toContain('legacy-token-value');
    expect(raw).not.toContain(CLIENT_SECRET);
    expect(record.servers.legacy!.sealed).toBeDefined();
    expect(record.servers.open).toEqual(open);
    // Sealed once: exactly one instance wrote, and reading again writes nothing more.
    expect(instances.filter((i) => i.logs.some((l) => l.includes('sealed the credentials'))).length).toBe(1);
    for (const i of instances) {
      await i.stored.sync();
      expect(i.applied.at(-1)!.get('legacy')).toEqual(legacy());
      expect(i.logs.join('\n')).not.toContain('legacy-token-value');
      expect(i.logs.join('\n')).not.toContain(CLIENT_SECRET);
    }
    expect((await storage.get<{ version: string }>('gateway:servers'))!.version).toBe(record.version);
  });

  it('without a vault key it is served as it is, left in clear, and the log names the server once (never its credentials)', async () => {
    const { storage, stored, last, warnings } = setup();
    await storage.set('gateway:servers', { version: 'older', servers: { legacy: legacy() } });
    await stored.sync();
    await storage.set('gateway:servers', { version: 'older-2', servers: { legacy: legacy() } });
    await stored.sync();
    expect(last().get('legacy')).toEqual(legacy());
    expect(JSON.stringify(await storage.get('gateway:servers'))).toContain('legacy-token-value');
    expect(warnings.filter((w) => w.includes('stored in clear'))).toHaveLength(1);
    expect(warnings.join('\n')).toContain('legacy');
    expect(warnings.join('\n')).not.toContain('legacy-token-value');
  });

  it('a seal that fails (the store down a moment) is said as such, and the next sync seals it', async () => {
    // The store refuses the first sealing write, as a store that is briefly unreachable would.
    class Flaky extends MemoryStorage {
      refusals = 1;
      override async compareAndSet<T>(key: string, expected: T | undefined, value: T): Promise<boolean> {
        if (this.refusals-- > 0) throw new Error('storage unavailable');
        return super.compareAndSet(key, expected, value);
      }
    }
    const { storage, stored, last, warnings } = setup({ masterKey: MASTER, storage: new Flaky() });
    await storage.set('gateway:servers', { version: 'older', servers: { legacy: legacy() } });
    await stored.sync();
    expect(last().get('legacy')).toEqual(legacy());
    expect(warnings.join('\n')).toContain('could not be sealed yet');
    expect(warnings.join('\n')).not.toContain('could not be read');
    expect(JSON.stringify(await storage.get('gateway:servers'))).toContain('legacy-token-value');
    await stored.sync(); // the record is unchanged: before, its version was known and nothing was tried again
    expect(JSON.stringify(await storage.get('gateway:servers'))).not.toContain('legacy-token-value');
    expect(last().get('legacy')).toEqual(legacy());
  });
});

describe('StoredServers: overlapping syncs', () => {
  it('a sync that read the list before a change does not apply it after the change was applied', async () => {
    const storage = new LateReads();
    const { stored, last } = setup({ storage });
    await stored.put('kept', remote());
    await stored.put('removed', remote());
    storage.armed = 'gateway:servers';
    const poll = stored.sync(); // the poll (or a signal) reads the list with both servers, and answers late
    await expect.poll(() => storage.release).toBeDefined();
    expect(await stored.remove('removed')).toBe(true);
    expect([...last().keys()]).toEqual(['kept']);
    storage.release!();
    await poll;
    expect([...last().keys()]).toEqual(['kept']);
    // A later sync still applies what is stored.
    await stored.put('added', remote());
    expect([...last().keys()].sort()).toEqual(['added', 'kept']);
  });
});
