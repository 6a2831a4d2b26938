/**
 * Event ids are `<streamId>_<seq>`: the SDK's stream ids are UUIDs or `_GET_stream`, so the
 * sequence number is whatever follows the last underscore.
 */
export function formatEventId(streamId: string, seq: number): string {
  return `${streamId}_${seq}`;
}

export function parseEventId(eventId: string): { streamId: string; seq: number } | undefined {
  const at = eventId.lastIndexOf('_');
  if (at <= 0) return undefined;
  const seq = Number(eventId.slice(at + 1));
  if (!Number.isSafeInteger(seq) || seq < 1) return undefined;
  return { streamId: eventId.slice(0, at), seq };
}

/** The SDK stores `{}` as the priming event of each stream; it is never replayed. */
export function isPriming(message: unknown): boolean {
  if (typeof message !== 'object' || message === null) return false;
  // Asked of every stored event: a key loop ends at the first key, Object.keys would copy them all.
  for (const _ in message) return false;
  return true;
}
