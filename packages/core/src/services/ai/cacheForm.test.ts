import { describe, expect, it } from 'vitest';
import { storedWire } from './cacheForm.js';

describe('storedWire', () => {
  it('keeps a UTF-8 body as text that encodes back to the same bytes', () => {
    const bytes = new TextEncoder().encode('{"text":"héllo ✓"}');
    const w = storedWire({ body: bytes, contentType: 'application/json' })!;
    expect(Buffer.from(w.body, 'utf8').equals(Buffer.from(bytes))).toBe(true);
    expect(w.contentType).toBe('application/json');
  });

  it('refuses a body that is not UTF-8: its replay would not be the same bytes', () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d]);
    expect(storedWire({ body: bytes, contentType: 'application/json' })).toBeNull();
  });
});
