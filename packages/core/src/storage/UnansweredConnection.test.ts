import { describe, expect, it, vi } from 'vitest';
import { UnansweredConnection } from './UnansweredConnection.js';

describe('UnansweredConnection', () => {
  it('a timed-out command marks it until one probe is answered; other failures do not', async () => {
    let answer: (() => void) | undefined;
    let probes = 0;
    const conn = new UnansweredConnection(
      () => {
        probes++;
        return new Promise<void>((resolve) => (answer = resolve));
      },
      () => false,
    );
    conn.failed(new Error('ERR wrong number of arguments'));
    expect(conn.isUnanswered).toBe(false);
    conn.failed(new Error('Command timed out'));
    conn.failed(new Error('Command timed out'));
    expect(conn.isUnanswered).toBe(true);
    expect(probes).toBe(1);
    answer!();
    await new Promise((r) => setImmediate(r));
    expect(conn.isUnanswered).toBe(false);
  });

  it('probes again after a failed probe, and a reconnect clears the mark', async () => {
    let probes = 0;
    const conn = new UnansweredConnection(
      async () => {
        probes++;
        throw new Error('Command timed out');
      },
      () => false,
    );
    conn.failed(new Error('Command timed out'));
    // The second probe comes after the watch's 100 ms wait: awaited, not slept for.
    await vi.waitFor(() => expect(probes).toBeGreaterThanOrEqual(2));
    expect(conn.isUnanswered).toBe(true);
    conn.answered();
    expect(conn.isUnanswered).toBe(false);
  });
});
