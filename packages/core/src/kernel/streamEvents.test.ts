import { describe, expect, it } from 'vitest';
import { isAsyncIterable, isFinishEvent, isTextEvent } from './streamEvents.js';

describe('the streamed-procedure event contract', () => {
  it('a text event carries a string delta', () => {
    expect(isTextEvent({ type: 'text', delta: 'hi' })).toBe(true);
    expect(isTextEvent({ type: 'text', delta: 3 })).toBe(false);
    expect(isTextEvent({ type: 'finish', result: 'hi' })).toBe(false);
    expect(isTextEvent(null)).toBe(false);
    expect(isTextEvent('text')).toBe(false);
  });

  it('a finish event is known by its type alone (its result may be anything, undefined too)', () => {
    expect(isFinishEvent({ type: 'finish', result: { success: true } })).toBe(true);
    expect(isFinishEvent({ type: 'finish' })).toBe(true);
    expect(isFinishEvent({ type: 'text', delta: 'x' })).toBe(false);
    expect(isFinishEvent(undefined)).toBe(false);
  });

  it('a result streams when it is async iterable', async () => {
    async function* gen() {
      yield 1;
    }
    expect(isAsyncIterable(gen())).toBe(true);
    expect(isAsyncIterable(new ReadableStream())).toBe(true);
    expect(isAsyncIterable([1, 2])).toBe(false);
    expect(isAsyncIterable(null)).toBe(false);
  });
});
