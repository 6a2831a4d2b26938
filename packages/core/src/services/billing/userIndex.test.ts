import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { alice, backends, bob, type OpenStore } from './__tests__/kit.js';
import { rememberUser, userByEmail } from './userIndex.js';

describe.each(backends)('email index on $name', (backend) => {
  let store: OpenStore;
  beforeEach(async () => {
    store = await backend.open('user-index');
  });
  afterEach(async () => {
    await store.storage.close();
    await store.cleanup();
  });

  it('writes the user record and the email index together; a changed email moves the index', async () => {
    const s = store.storage;
    await rememberUser(s, alice);
    expect(await userByEmail(s, ' Alice@Example.com ')).toBe(alice.sub);
    await rememberUser(s, { ...alice, email: 'alice@new.example' });
    expect(await userByEmail(s, 'alice@new.example')).toBe(alice.sub);
    expect(await userByEmail(s, 'alice@example.com')).toBeUndefined();
    // Bob takes Alice's new address; Alice moving on must not delete Bob's entry.
    await rememberUser(s, { ...bob, email: 'alice@new.example' });
    await rememberUser(s, { ...alice, email: 'alice@third.example' });
    expect(await userByEmail(s, 'alice@new.example')).toBe(bob.sub);
    expect(await userByEmail(s, 'alice@third.example')).toBe(alice.sub);
  });
});
