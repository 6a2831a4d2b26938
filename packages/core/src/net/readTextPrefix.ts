/**
 * The first `maxBytes` of a response body as text (a multi-byte character cut at the end is
 * replaced), then the body cancelled: for an error answer whose words we read (a provider's
 * refusal) without letting a hostile or broken server make us buffer an unbounded body.
 * Undefined when there is no body or it fails while read.
 */
export async function readTextPrefix(res: Response, maxBytes: number): Promise<string | undefined> {
  if (!res.body) return undefined;
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
    if (size >= maxBytes) await reader.cancel().catch(() => undefined);
  } catch {
    return undefined;
  }
  return new TextDecoder().decode(Buffer.concat(chunks, size).subarray(0, maxBytes));
}
