import pg from 'pg';

/**
 * The text, name and parameters of every query any pg client of this process sends, until `stop` (each is
 * one round trip): the statements a store really sends, read at the driver.
 */
export function recordQueries(): { readonly sent: Array<{ text: string; name?: string; values?: unknown[] }>; stop(): void } {
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const recorder = { sent: [] as Array<{ text: string; name?: string; values?: unknown[] }>, stop: () => (proto.query = original) };
  proto.query = function (this: unknown, ...args: unknown[]) {
    const q = args[0] as string | { text: string; name?: string; values?: unknown[] };
    recorder.sent.push(
      typeof q === 'string'
        ? { text: q }
        : { text: q.text, ...(q.name ? { name: q.name } : {}), ...(q.values ? { values: q.values } : {}) },
    );
    return original.apply(this, args);
  };
  return recorder;
}
