import { InMemoryTransport, SdkError, SdkErrorCode, Server } from '@modelcontextprotocol/server';
import { afterEach, describe, expect, it } from 'vitest';
import { closeWithoutStacks } from './closeWithoutStacks.js';

/** A server whose ping to the client is still waiting when the connection closes: what the close gives it. */
async function closedWhileWaiting(server: Server): Promise<unknown> {
  const [serverEnd, clientEnd] = InMemoryTransport.createLinkedPair();
  await clientEnd.start(); // the client never answers
  await server.connect(serverEnd);
  const waiting = server.ping().then(
    () => undefined,
    (err: unknown) => err,
  );
  await clientEnd.close();
  return waiting;
}

describe('closeWithoutStacks', () => {
  const limit = Error.stackTraceLimit;
  afterEach(() => {
    Error.stackTraceLimit = limit;
  });

  it('settles what waits with the same ConnectionClosed error, without a stack', async () => {
    const server = new Server({ name: 't', version: '1' }, { capabilities: {} });
    closeWithoutStacks(server);
    const err = await closedWhileWaiting(server);
    expect(err).toBeInstanceOf(SdkError);
    expect((err as SdkError).code).toBe(SdkErrorCode.ConnectionClosed);
    expect((err as SdkError).message).toBe('Connection closed');
    expect((err as SdkError).stack).not.toMatch(/\n\s+at /);
  });

  it("leaves the SDK's own close as it is without it (the error has its stack)", async () => {
    const err = await closedWhileWaiting(new Server({ name: 't', version: '1' }, { capabilities: {} }));
    expect((err as SdkError).code).toBe(SdkErrorCode.ConnectionClosed);
    expect((err as SdkError).stack).toMatch(/\n\s+at /);
  });

  it('turns stack capture back on after the close, whatever the limit was', async () => {
    Error.stackTraceLimit = 17;
    const server = new Server({ name: 't', version: '1' }, { capabilities: {} });
    closeWithoutStacks(server);
    let during = -1;
    server.onclose = () => {
      during = Error.stackTraceLimit;
    };
    await closedWhileWaiting(server);
    expect(during).toBe(0);
    expect(Error.stackTraceLimit).toBe(17);
    expect(new Error('after').stack).toMatch(/\n\s+at /);
  });

  it('turns stack capture back on when the close throws', async () => {
    const server = new Server({ name: 't', version: '1' }, { capabilities: {} });
    closeWithoutStacks(server);
    server.onclose = () => {
      throw new Error('cleanup failed');
    };
    const [serverEnd, clientEnd] = InMemoryTransport.createLinkedPair();
    await server.connect(serverEnd);
    await expect(clientEnd.close()).rejects.toThrow('cleanup failed');
    expect(Error.stackTraceLimit).toBe(limit);
  });
});
