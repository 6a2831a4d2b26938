import type { EventStore, JSONRPCMessage } from '@modelcontextprotocol/server';
import { formatEventId } from './eventId.js';

/** What the wrapper reports when the store fails or is slow (throttled by the caller). */
export type EventStoreFailure = (op: 'store' | 'lookup' | 'replay', error: unknown) => void;

/** Resolve with `fallback` when `work` fails or takes longer than `ms` (no time bound when `ms` is undefined). */
function within<T>(ms: number | undefined, work: () => Promise<T>, fallback: T, onFail: (err: unknown) => void): Promise<T> {
  const failed = (err: unknown): T => {
    onFail(err);
    return fallback;
  };
  const run = (): Promise<T> => {
    try {
      return work().catch(failed);
    } catch (err) {
      return Promise.resolve(failed(err));
    }
  };
  // Two SSE events per call (the priming event and the answer) go through here: a plain
  // promise chain, not an async function awaiting another one.
  if (ms === undefined) return run();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(failed(new Error(`event store did not answer within ${ms} ms`))), ms);
  });
  return Promise.race([run(), late]).finally(() => clearTimeout(timer));
}

/** A store whose storeEvent is done by the time it returns (the in-memory one): asked without a promise of its own. */
export interface ImmediateEventStore extends EventStore {
  storeEventNow(streamId: string, message: JSONRPCMessage): string;
}

/**
 * The SDK transport awaits the event store before it writes each SSE message, so a store that
 * hangs or throws (Redis down) would swallow the answer. This wrapper bounds every call: after
 * `timeoutMs` or on an error the message goes out anyway, under an event id that is never
 * resumable (`<stream>_0`: a resume from it is refused and the client starts over), and lookups
 * report "unknown". When the store recovers, the next events are stored again: no restart.
 * `timeoutMs` undefined: errors only, for a store that answers at once (memory); a timer and a
 * race per SSE message cost a few % of a call.
 */
export function failSafeEventStore(
  store: EventStore | ImmediateEventStore,
  timeoutMs: number | undefined,
  onFailure: EventStoreFailure,
): EventStore {
  return {
    storeEvent:
      timeoutMs === undefined && 'storeEventNow' in store
        ? // Two SSE events per call (the priming event and the answer): no closure, no promise chain.
          (streamId: string, message: JSONRPCMessage) => {
            try {
              return Promise.resolve(store.storeEventNow(streamId, message));
            } catch (err) {
              onFailure('store', err);
              return Promise.resolve(formatEventId(streamId, 0));
            }
          }
        : (streamId: string, message: JSONRPCMessage) =>
            within(
              timeoutMs,
              () => store.storeEvent(streamId, message),
              formatEventId(streamId, 0),
              (e) => onFailure('store', e),
            ),
    getStreamIdForEventId: (eventId: string) =>
      within(
        timeoutMs,
        async () => store.getStreamIdForEventId?.(eventId),
        undefined,
        (e) => onFailure('lookup', e),
      ),
    replayEventsAfter: (lastEventId, opts) =>
      within(
        timeoutMs === undefined ? undefined : timeoutMs * 4,
        () => store.replayEventsAfter(lastEventId, opts),
        '',
        (e) => onFailure('replay', e),
      ),
  };
}
